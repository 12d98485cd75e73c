"""What every family shares: the engine's contract and the explanations.

The family protocol and its discovery (:mod:`.family`), the noise allocation the
accountant hands a family (:mod:`.allocation`), explanations without data
(:mod:`.explanations`) and accuracy floors (:mod:`.floors`).
"""
