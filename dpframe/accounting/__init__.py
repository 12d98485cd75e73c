"""Budgets, accountants (privacy filters) and the persistent ledger."""

from dpframe.accounting.accountants import (
    Accountant,
    ApproxDPAccountant,
    Charge,
    PureDPAccountant,
    ZCDPAccountant,
    rho_from_epsilon_delta,
)
from dpframe.accounting.choice import default_accounting, make_accountant
from dpframe.accounting.gdp import GaussianDPAccountant, default_delta_reserve
from dpframe.accounting.ledger import Ledger, PendingCharge, default_ledger_path
from dpframe.mechanisms.core.allocation import NoiseAllocation, zcdp_epsilon
from dpframe.plan.privacy import Budget, PrivacyRequest, to_fraction

__all__ = [
    "Accountant",
    "ApproxDPAccountant",
    "Budget",
    "Charge",
    "GaussianDPAccountant",
    "Ledger",
    "NoiseAllocation",
    "PendingCharge",
    "PrivacyRequest",
    "PureDPAccountant",
    "ZCDPAccountant",
    "default_accounting",
    "default_delta_reserve",
    "default_ledger_path",
    "make_accountant",
    "rho_from_epsilon_delta",
    "to_fraction",
    "zcdp_epsilon",
]
