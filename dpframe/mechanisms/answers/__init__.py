"""Answers that keep their uncertainty: the ``dp`` pandas dtype and its affine forms.

See :mod:`dpframe.mechanisms.answers.array` (the dtype and pandas' array protocol),
:mod:`dpframe.mechanisms.answers.cells` (what a released column holds),
:mod:`dpframe.mechanisms.answers.arithmetic` (its operators, the intervals following),
:mod:`dpframe.mechanisms.answers.value` (one released number) and
:mod:`dpframe.mechanisms.answers.forms` (the forms and their intervals); the
release objects are in :mod:`dpframe.mechanisms.answers.results` and how a
released number reads on screen in :mod:`dpframe.mechanisms.answers.display`.
"""

from dpframe.mechanisms.answers.arithmetic import PlainResultWarning
from dpframe.mechanisms.answers.array import DPArray, DPDtype
from dpframe.mechanisms.answers.forms import Block, Forms
from dpframe.mechanisms.answers.value import DPValue

__all__ = ["Block", "DPArray", "DPDtype", "DPValue", "Forms", "PlainResultWarning"]
