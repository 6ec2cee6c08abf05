"""A variational autoencoder on two interleaved half-moons, a 2-D data set made with NumPy.

The encoder maps a point x to a Gaussian q(z|x) over a 2-D latent code; the decoder maps
a code to a Gaussian p(x|z) with a learnt mean and variance per coordinate. Training
maximises the evidence lower bound (ELBO) on log p(x):

    ELBO = E_q[log p(x|z)] - KL(q(z|x) || N(0, I)),

estimated with one reparameterised sample z = mean + std * noise, so gradients flow
through the sampling. The model returns its loss (the negative ELBO) itself, so the
Trainer needs no loss function. The printed ELBO (nats per point, on the training and the
held-out points) climbs from about -2.6 before training to about -1.55; the best any
model of this data could reach is near -0.7, the data's own entropy. The KL term at the
end says how many nats the code carries about each point.

    python examples/vae.py [--epochs N]
"""

import argparse
import math

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset

import numpy as np

LOG_2PI = math.log(2 * math.pi)


def two_moons(n: int, noise: float = 0.08, seed: int = 0) -> np.ndarray:
    """`n` points (float32) on two interleaved half circles, jittered by Gaussian `noise`."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, np.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(angle), 1 - np.cos(angle))
    y = np.where(upper, np.sin(angle), 0.5 - np.sin(angle))
    points = np.stack([x, y], axis=1) + noise * rng.standard_normal((n, 2))
    return points.astype(np.float32)


def mlp(inputs: int, outputs: int, hidden: int = 64) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                         nn.Tanh(), nn.Linear(hidden, outputs))


class VAE(nn.Module):
    """Gaussian encoder and decoder; `forward(x)` returns the negative ELBO as "loss" and
    the ELBO's two terms, each a mean over the batch."""

    def __init__(self, latent: int = 2, hidden: int = 64):
        super().__init__()
        self.encoder = mlp(2, 2 * latent, hidden)
        self.decoder = mlp(latent, 2 * 2, hidden)

    def forward(self, x):
        mean, log_var = self.encoder(x).chunk(2, dim=1)
        z = mean + (0.5 * log_var).exp() * dl.randn_like(mean)
        x_mean, x_log_var = self.decoder(z).chunk(2, dim=1)
        log_likelihood = -0.5 * ((x - x_mean) ** 2 / x_log_var.exp() + x_log_var
                                 + LOG_2PI).sum(dim=1)
        kl = 0.5 * (mean ** 2 + log_var.exp() - 1 - log_var).sum(dim=1)
        elbo = (log_likelihood - kl).mean()
        return {"loss": -elbo, "reconstruction": -log_likelihood.mean(), "kl": kl.mean()}


class PrintELBO:
    """A training callback: the training and held-out ELBO every `every` epochs and at the
    last."""

    def __init__(self, every: int):
        self.every = every

    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        if (epoch + 1) % self.every == 0 or epoch + 1 == trainer.max_epochs:
            print(f"epoch {epoch + 1:3d}  ELBO {-logs['loss']:7.3f}  "
                  f"held-out ELBO {-logs['val_loss']:7.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    epochs = parser.parse_args(argv).epochs

    train = TensorDataset(dl.tensor(two_moons(2000, seed=0)))
    held_out = TensorDataset(dl.tensor(two_moons(500, seed=1)))
    dl.manual_seed(0)
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    trainer = dl.train.Trainer(model, optimizer,
                               scheduler=optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs),
                               max_epochs=epochs, seed=0,
                               callbacks=[PrintELBO(every=max(1, epochs // 10))])
    held_out_loader = DataLoader(held_out, batch_size=500)
    print(f"untrained     held-out ELBO {-trainer.evaluate(held_out_loader)['loss']:7.3f}")
    trainer.fit(DataLoader(train, batch_size=100, shuffle=True), held_out_loader)

    with dl.no_grad():  # the final model's ELBO terms on the held-out points
        terms = model(held_out.tensors[0])
    print(f"held-out: reconstruction {terms['reconstruction'].item():.3f} nats, "
          f"KL {terms['kl'].item():.3f} nats")


if __name__ == "__main__":
    main()
