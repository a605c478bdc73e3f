import copy, torch, torch.nn as nn

class DQN:
    def __init__(self, obs_dim, n_actions, lr=1e-4, target_every=1000, gamma=0.99):
        self.q = nn.Sequential(nn.Linear(obs_dim, 128), nn.ReLU(), nn.Linear(128, n_actions))
        self.target = copy.deepcopy(self.q); self.opt = torch.optim.Adam(self.q.parameters(), lr=lr)
        self.target_every, self.gamma, self.steps = target_every, gamma, 0
    def update(self, batch):
        s, a, r, s2, d = batch
        with torch.no_grad(): y = r + self.gamma * (1 - d) * self.target(s2).max(-1).values
        loss = ((self.q(s).gather(1, a[:, None]).squeeze(1) - y) ** 2).mean()
        self.opt.zero_grad(); loss.backward(); self.opt.step(); self.steps += 1
        if self.steps % self.target_every == 0: self.target.load_state_dict(self.q.state_dict())
