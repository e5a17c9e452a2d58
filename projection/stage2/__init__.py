"""Stage 2: an LLM judge keeps the candidates whose passage truly answers the question.

:mod:`.verification`: :func:`verifier_messages`, :func:`parse_verdict`, :func:`judge`, :class:`Verdict`.
"""
