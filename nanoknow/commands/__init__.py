"""One module per ``nanoknow`` command: its flags (``add_arguments``), its example and
``run(args)``, which fills the library's settings and calls it. No logic lives here.
"""
