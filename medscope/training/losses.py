"""Loss terms that are not plain next-token likelihood (counterfactual paper §3.7).

Written here rather than taken from TRL: the C4 terms have no library form, and TRL's
DPOTrainer runs its own transformers-Trainer loop, whereas C2 must share the loop of every
other method here (Ray Train checkpoints on the run's storage URI, resume at the same example,
the same single-turn chat encoding as C4's s(x)); the DPO loss itself is three lines, checked
against hand computation in the tests.

References: DPO: R. Rafailov et al., "Direct preference optimization: your language model is
secretly a reward model", NeurIPS 2023.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def decision_logodds(logp_present: torch.Tensor, logp_absent: torch.Tensor) -> torch.Tensor:
    """s(x) = log p(present reply | x) − log p(absent reply | x), the single-turn decision log-odds.

    Parameters
    ----------
    logp_present : torch.Tensor
        Summed log-probability of the "present" reply, per example.
    logp_absent : torch.Tensor
        Summed log-probability of the "absent" reply, same shape.

    Returns
    -------
    torch.Tensor
        s(x), same shape.
    """
    return logp_present - logp_absent


def paired_view_terms(
    s_o: torch.Tensor, s_c: torch.Tensor, s_e: torch.Tensor, first_o: torch.Tensor, first_c: torch.Tensor, tau: float = 2.0
) -> dict[str, torch.Tensor]:
    """C4's three terms, each averaged over the batch of cases.

    margin = softplus(τ − (s(C) − s(E))): the control edit C must keep the finding τ log-odds
    above the erasure E, so a drop caused by editing as such cancels out (difference in
    differences). invariance = (s(O) − s(C))²: original and control should read alike.
    first_action = (log p(a₁ | C) − log p(a₁ | O))², a₁ the agent's first tool call on O: its
    first move should not depend on whether an edit happened. Cases whose O trajectory makes no
    tool call have no a₁ and are left out of this term (zero when no case of the batch has one).

    Parameters
    ----------
    s_o, s_c, s_e : torch.Tensor
        s(x) of the original, control and erasure of each case, shape (batch,).
    first_o, first_c : torch.Tensor
        log p(a₁ | O) and log p(a₁ | C) of the cases that have a first tool call, shape (n,), n ≤ batch
        (n = 0: the term is zero).
    tau : float, optional
        The margin τ in log-odds.

    Returns
    -------
    dict of str to torch.Tensor
        Scalars ``margin``, ``invariance`` and ``first_action``.

    References
    ----------
    .. [1] counterfactual paper, §3.7 (C4).
    """
    return {
        "margin": F.softplus(tau - (s_c - s_e)).mean(),
        "invariance": ((s_o - s_c) ** 2).mean(),
        "first_action": ((first_c - first_o) ** 2).mean() if first_o.numel() else s_o.new_zeros(()),
    }


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Direct preference optimisation (Rafailov et al. 2023), sigmoid form.

    Inputs are per-pair summed log-probabilities of the chosen / rejected replies under the
    policy and the frozen reference. Returns (mean loss, per-pair reward margin).

    Parameters
    ----------
    policy_chosen, policy_rejected : torch.Tensor
        Summed log-probabilities under the policy, shape (pairs,).
    ref_chosen, ref_rejected : torch.Tensor
        The same under the frozen reference.
    beta : float, optional
        The DPO temperature β.

    Returns
    -------
    loss : torch.Tensor
        Mean of −log σ(margin), a scalar.
    margin : torch.Tensor
        β((π_c − ref_c) − (π_r − ref_r)) per pair, detached.

    References
    ----------
    .. [1] R. Rafailov et al., "Direct preference optimization: your language model is secretly a reward
       model", NeurIPS 2023.
    .. [2] counterfactual paper, §3.7 (C2).
    """
    margin = beta * ((policy_chosen - ref_chosen) - (policy_rejected - ref_rejected))
    return -F.logsigmoid(margin).mean(), margin.detach()
