"""Models fitted privately: linear and logistic regression nodes."""

from __future__ import annotations

import warnings
from typing import Any, Literal

from dpframe.api.handle import FrameHandle
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import Regression

__all__ = ["analysis_of", "regression_node"]


def analysis_of(analysis: str, accounting: str | None) -> str:
    """``analysis=``, or the deprecated ``accounting=`` it replaces (with a FutureWarning)."""
    if accounting is None:
        return analysis
    warnings.warn(
        "The regressions' accounting= is now analysis= (accounting= names the session's "
        "accounting); accounting= will be removed.",
        FutureWarning,
        stacklevel=4,
    )
    return accounting


def regression_node(
    frame: FrameHandle,
    loss: Literal["squared", "logistic"],
    features: object,
    target: object,
    request: PrivacyRequest,
    options: dict[str, Any],
) -> Regression:
    """A linear or logistic regression."""
    from dpframe.mechanisms.models.model_family import (  # loaded with its family
        check_features,
        check_regression_options,
    )

    names, bounds, target_name, target_bounds = check_features(frame.schema, features, target, loss)
    checked = check_regression_options(options, loss)
    return Regression(
        plan=frame.plan,
        privacy=request,
        loss=loss,
        features=tuple(names),
        feature_bounds=tuple(bounds),
        target=target_name,
        target_bounds=target_bounds,
        **checked,
    )
