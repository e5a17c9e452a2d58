"""Scale-out engines for the corpus-scale stages (optional extra ``nanoknow[ray]``).

:mod:`projection.scale.ray_project` runs ``nanoknow project``'s two stages on a Ray cluster
(or a local Ray) and writes the same work and final files as the single-machine run.
"""
