"""Diary benchmark commands: the from-scratch tiny nanochat recipe (:mod:`.train`,
:mod:`.tiny_model`).
"""
