import torch, torch.nn.functional as F

def tsls_eps(epoch, n_epochs, eps0=0.2, t0=1.0, t_end=0.1):
    "Temperature-scaled smoothing strength: eps_t = eps0 * T_t / T0, T decays linearly from t0 to t_end."
    t = t0 + (t_end - t0) * epoch / max(1, n_epochs - 1)
    return eps0 * t / t0

def smoothed_ce(logits, y, eps):
    "Cross-entropy against (1 - eps) * onehot(y) + eps / K."
    k = logits.shape[-1]
    q = torch.full_like(logits, eps / k).scatter_(1, y[:, None], 1 - eps + eps / k)
    return -(q * F.log_softmax(logits, -1)).sum(-1).mean()
