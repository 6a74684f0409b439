"""Numerical core: variation-ratio parameters, the neutral-aware bound, closed forms.

Only numpy and scipy are imported here, so the core can be reused outside dp-accounting/Opacus.
"""
