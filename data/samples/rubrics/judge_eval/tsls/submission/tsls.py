import torch, torch.nn.functional as F

def eps_schedule(epoch, n_epochs, eps0=0.1):
    "eps_t = eps0 * T_t / T0 with T decaying linearly from 1.0 to 0.1 (note: eps0 = 0.1 here)."
    t = 1.0 - 0.9 * epoch / max(1, n_epochs - 1)
    return eps0 * t

def tsls_loss(logits, y, eps):
    k = logits.shape[-1]
    target = torch.full_like(logits, eps / k).scatter_(1, y[:, None], 1 - eps + eps / k)
    return -(target * F.log_softmax(logits, -1)).sum(-1).mean()
