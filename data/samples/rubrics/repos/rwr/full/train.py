import argparse, gymnasium as gym, minigrid, numpy as np
from buffer import RewardWeightedReplay
from dqn import DQN

p = argparse.ArgumentParser()
p.add_argument("--replay", choices=["rwr", "uniform", "per"], default="rwr")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--steps", type=int, default=200_000)
a = p.parse_args()
env = gym.make("MiniGrid-DoorKey-5x5-v0")
success = []
for step in range(0, a.steps, 10_000):
    # ... collect episodes with epsilon-greedy (1.0 -> 0.05 over 50k steps), update the DQN ...
    # evaluate the greedy policy on 50 episodes every 10k steps
    success.append((step, evaluate(env, episodes=50)))
np.save(f"results/{a.replay}_{a.seed}.npy", np.array(success))
