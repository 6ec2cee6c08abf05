"""REINFORCE: learn a policy from rewards alone, on a multi-armed bandit and on CartPole.

The policy gradient theorem says that the gradient of the expected return is the expected
value of (return - baseline) * grad log pi(action | state): raise the log-probability of
the actions that did better than usual, lower the others. The baseline (here the average
return so far, or at that time step) changes nothing in expectation but makes the estimate
far less noisy. There is no differentiable environment and no labels: the loss is
-(advantage * log-probability), built from the actions the policy sampled itself.

Two problems, both written here in NumPy (no gym needed):

- a 10-armed bandit: each pull of arm k pays a reward drawn from N(mean_k, 1); the policy
  is a softmax over 10 learned preferences, and the mean reward per episode (a batch of
  pulls) rises towards the best arm's mean;
- CartPole-v1: keep a pole upright on a cart by pushing it left or right, +1 per step, at
  most 500 steps (the classic Barto, Sutton & Anderson dynamics, integrated as gym's
  CartPole-v1 does); the policy is a small network of the 4 observations, and the mean
  return per batch of episodes rises from about 20 (random pushing).

    python examples/reinforce.py [--bandit-episodes N] [--iterations N] [--episodes N]
"""

import argparse
import math

import dlfree as dl
from dlfree import nn, optim

import numpy as np


class Bandit:
    """K arms; pulling arm k pays N(means[k], 1). The means are drawn once from N(0, 1)."""

    def __init__(self, arms: int, rng: np.random.Generator):
        self.means = rng.standard_normal(arms)
        self.rng = rng

    def pull(self, arms: np.ndarray) -> np.ndarray:
        return self.means[arms] + self.rng.standard_normal(len(arms))


class CartPole:
    """`n` independent CartPole-v1 environments stepped together.

    State (x, x_dot, theta, theta_dot); an action pushes the cart with 10 N to the left (0)
    or right (1). Euler steps of 0.02 s; an episode ends when |x| > 2.4, |theta| > 12 degrees
    or after 500 steps. An environment that has ended stays ended (its rows are masked)."""

    gravity, cart_mass, pole_mass, half_length = 9.8, 1.0, 0.1, 0.5
    force, tau, max_steps = 10.0, 0.02, 500
    x_limit, theta_limit = 2.4, 12 * 2 * math.pi / 360

    def __init__(self, n: int, rng: np.random.Generator):
        self.state = rng.uniform(-0.05, 0.05, size=(n, 4))
        self.alive = np.ones(n, dtype=bool)
        self.steps = 0

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Advance every live environment by one action; the reward (1 where it was alive)."""
        x, x_dot, theta, theta_dot = self.state.T
        total = self.cart_mass + self.pole_mass
        pole_moment = self.pole_mass * self.half_length
        force = np.where(actions == 1, self.force, -self.force)
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + pole_moment * theta_dot ** 2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.half_length * (4.0 / 3.0 - self.pole_mass * cos ** 2 / total))
        x_acc = temp - pole_moment * theta_acc * cos / total
        new = np.stack([x + self.tau * x_dot, x_dot + self.tau * x_acc,
                        theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc], axis=1)
        self.state = np.where(self.alive[:, None], new, self.state)
        reward = self.alive.astype(np.float64)
        self.steps += 1
        x, theta = self.state[:, 0], self.state[:, 2]
        fell = (np.abs(x) > self.x_limit) | (np.abs(theta) > self.theta_limit)
        self.alive &= ~fell & (self.steps < self.max_steps)
        return reward


def train_bandit(episodes: int, pulls: int, seed: int) -> list[float]:
    """REINFORCE on a 10-armed bandit with a running-average baseline; the mean reward of
    each episode of `pulls` pulls."""
    rng = np.random.default_rng(seed)
    bandit = Bandit(10, rng)
    generator = dl.Generator().manual_seed(seed)
    preferences = dl.Parameter(dl.zeros(10))
    opt = optim.Adam([preferences], lr=0.05)
    baseline, history = 0.0, []
    for episode in range(episodes):
        log_probs = dl.log_softmax(preferences, dim=0)
        arms = dl.multinomial(log_probs.detach().exp(), pulls, replacement=True,
                              generator=generator)
        rewards = bandit.pull(arms.numpy())
        advantage = dl.tensor((rewards - baseline).astype(np.float32))
        loss = -(log_probs[arms] * advantage).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(float(rewards.mean()))
        baseline += (history[-1] - baseline) / (episode + 1)  # the average reward so far
    print(f"bandit: best arm pays {bandit.means.max():.3f} on average, the arms "
          f"{bandit.means.mean():.3f}")
    return history


def rollout(policy: nn.Module, episodes: int, rng, generator):
    """Play `episodes` CartPole games with the policy sampling its actions; the states
    (T, n, 4), actions (T, n), alive mask (T, n) and rewards (T, n)."""
    env = CartPole(episodes, rng)
    states, actions, alive, rewards = [], [], [], []
    with dl.no_grad():
        while env.alive.any():
            state = env.state.astype(np.float32)
            probs = dl.softmax(policy(dl.tensor(state)), dim=1)
            action = dl.multinomial(probs, 1, generator=generator)[:, 0].numpy()
            states.append(state)
            actions.append(action)
            alive.append(env.alive.copy())
            rewards.append(env.step(action))
    return np.stack(states), np.stack(actions), np.stack(alive), np.stack(rewards)


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = r_t + gamma r_{t+1} + ...: each step's discounted return from there on."""
    out = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1])
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def train_cartpole(iterations: int, episodes: int, seed: int, gamma: float = 0.99):
    """REINFORCE on CartPole with a per-time-step baseline (the batch's mean return-to-go at
    that step); the mean return (steps balanced) of each batch of `episodes` games."""
    rng = np.random.default_rng(seed)
    dl.manual_seed(seed)
    generator = dl.Generator().manual_seed(seed)
    policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))
    opt = optim.Adam(policy.parameters(), lr=0.02)
    history = []
    for _ in range(iterations):
        states, actions, alive, rewards = rollout(policy, episodes, rng, generator)
        history.append(float(rewards.sum(axis=0).mean()))
        g = returns_to_go(rewards, gamma)
        counts = np.maximum(alive.sum(axis=1, keepdims=True), 1)
        baseline = (g * alive).sum(axis=1, keepdims=True) / counts
        advantage = (g - baseline) * alive
        advantage /= advantage[alive].std() + 1e-8
        steps, n = actions.shape
        log_probs = dl.log_softmax(policy(dl.tensor(states.reshape(-1, 4))), dim=1)
        taken = log_probs[dl.arange(steps * n), dl.tensor(actions.reshape(-1))]
        weight = dl.tensor((advantage / alive.sum()).reshape(-1).astype(np.float32))
        loss = -(taken * weight).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return history


def report(name: str, per: str, unit: str, history: list[float], window: int) -> None:
    """Print every tenth value, then the first and last `window` values' means."""
    for i in range(0, len(history), max(len(history) // 10, 1)):
        print(f"{name}: {per} {i + 1:4d}  {unit} {history[i]:8.3f}")
    first, last = np.mean(history[:window]), np.mean(history[-window:])
    print(f"{name}: mean {unit} of the first {window}: {first:.3f}, of the last {window}: "
          f"{last:.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bandit-episodes", type=int, default=300,
                        help="bandit updates, each from one episode of pulls (default 300)")
    parser.add_argument("--pulls", type=int, default=32, help="pulls per bandit episode")
    parser.add_argument("--iterations", type=int, default=60,
                        help="CartPole updates, each from one batch of games (default 60)")
    parser.add_argument("--episodes", type=int, default=16, help="CartPole games per update")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    bandit = train_bandit(args.bandit_episodes, args.pulls, args.seed)
    report("bandit", "episode", "reward", bandit, max(len(bandit) // 10, 1))
    cartpole = train_cartpole(args.iterations, args.episodes, args.seed)
    report("cartpole", "update", "return", cartpole, max(len(cartpole) // 10, 1))


if __name__ == "__main__":
    main()
