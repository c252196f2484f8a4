"""Fastsim navigation: libfastsim's 2D robot simulator reimplemented (hard maze, household apartment).

Importing this package imports nothing optional; numba is used when installed (see ``kernels``).
"""
