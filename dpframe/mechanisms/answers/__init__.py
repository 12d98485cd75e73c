"""Answers that keep their uncertainty: the ``dp`` pandas dtype and its affine forms.

See :mod:`dpframe.mechanisms.answers.array` (the dtype) and
:mod:`dpframe.mechanisms.answers.forms` (the forms and their intervals); the
release objects are in :mod:`dpframe.mechanisms.answers.results` and how a
released number reads on screen in :mod:`dpframe.mechanisms.answers.display`.
"""

from dpframe.mechanisms.answers.array import DPArray, DPDtype, DPValue, PlainResultWarning
from dpframe.mechanisms.answers.forms import Block, Forms

__all__ = ["Block", "DPArray", "DPDtype", "DPValue", "Forms", "PlainResultWarning"]
