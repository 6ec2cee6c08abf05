"""Registries: names to the things plugins provide (`dl.registry.layers.get("Linear")`).

Each registry is filled from one register-style hook on first access and refilled
when the set of plugins changes. Every name knows its provider (distribution and
version); a name provided twice is an error naming both distributions.
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any, NamedTuple

from . import plugins
from .errors import PluginError

__all__ = ["Registry", "Architecture", "backends", "layers", "losses", "initializers",
           "optimizers", "schedulers", "metrics", "architectures", "callbacks", "ALL"]


class Architecture(NamedTuple):
    """A model family: its config class and the model class for each head."""

    model_type: str
    config_cls: type
    heads: dict


class _Entry(NamedTuple):
    obj: Any
    plugin: str


def _first_party(dist: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), dist)


# Names the first-party distributions provide, so that a missing one can be named.
FIRST_PARTY = {
    "backends": {},
    "layers": _first_party("dlfree-nn", """
        Linear Bilinear Embedding EmbeddingBag Conv1d Conv2d Conv3d ConvTranspose1d
        ConvTranspose2d MaxPool1d MaxPool2d AvgPool1d AvgPool2d AdaptiveAvgPool1d
        AdaptiveAvgPool2d AdaptiveMaxPool2d BatchNorm1d BatchNorm2d LayerNorm GroupNorm
        InstanceNorm2d RMSNorm Dropout Dropout2d Flatten Unflatten Upsample PixelShuffle Unfold
        Fold RNN LSTM GRU RNNCell LSTMCell GRUCell MultiheadAttention TransformerEncoderLayer
        TransformerEncoder TransformerDecoderLayer TransformerDecoder Transformer Sequential
        ModuleList ModuleDict Identity ReLU GELU SiLU Tanh Sigmoid Softmax LogSoftmax
        SyncBatchNorm"""),
    "losses": _first_party("dlfree-nn", """
        MSELoss L1Loss SmoothL1Loss HuberLoss CrossEntropyLoss NLLLoss BCELoss
        BCEWithLogitsLoss KLDivLoss PoissonNLLLoss GaussianNLLLoss CosineEmbeddingLoss
        MarginRankingLoss HingeEmbeddingLoss TripletMarginLoss MultiMarginLoss
        MultiLabelSoftMarginLoss CTCLoss"""),
    "initializers": _first_party("dlfree-nn", """
        uniform_ normal_ constant_ zeros_ ones_ eye_ xavier_uniform_ xavier_normal_
        kaiming_uniform_ kaiming_normal_ orthogonal_ trunc_normal_"""),
    "optimizers": _first_party("dlfree-optim", """
        SGD Adam AdamW Adamax NAdam RAdam RMSprop Adagrad Adadelta Lion LAMB NovoGrad
        AdaBound LARS Adafactor"""),
    "schedulers": _first_party("dlfree-optim", """
        StepLR MultiStepLR ExponentialLR CosineAnnealingLR CosineAnnealingWarmRestarts
        OneCycleLR CyclicLR LinearLR ConstantLR PolynomialLR LambdaLR ReduceLROnPlateau
        SequentialLR ChainedScheduler MultiplicativeLR LinearWarmup"""),
    "metrics": _first_party("dlfree-metrics", """
        Accuracy Precision Recall F1Score FBetaScore Specificity ConfusionMatrix AUROC
        AveragePrecision ROC PrecisionRecallCurve MatthewsCorrCoef CohenKappa CalibrationError
        HammingDistance JaccardIndex MeanSquaredError MeanAbsoluteError
        MeanAbsolutePercentageError R2Score ExplainedVariance PearsonCorrCoef SpearmanCorrCoef
        CosineSimilarity MeanAveragePrecision DiceScore MeanIoU PixelAccuracy
        GeneralizedDiceScore"""),
    "architectures": _first_party("dlfree-hf", "bert roberta distilbert gpt2 llama mistral qwen2"),
    "callbacks": {},
}


class Registry:
    """Names to objects for one kind of plugin-provided thing."""

    def __init__(self, kind: str, noun: str):
        self.kind = kind
        self.noun = noun
        self.hook = f"dlfree_register_{kind}"
        self._entries: dict[str, _Entry] = {}
        self._conflicts: dict[str, list[str]] = {}
        self._generation = -1

    def __repr__(self) -> str:
        return f"<Registry {self.kind}: {len(self.names())} names>"

    # ------------------------------------------------------------------ filling
    def _register_callback(self, found: list):
        if self.kind == "architectures":
            def register(model_type, config_cls, heads):
                if not isinstance(heads, dict) or not heads:
                    raise TypeError("register(model_type, config_cls, heads): heads must be a "
                                    "non-empty dict mapping head names to model classes")
                found.append((str(model_type), Architecture(str(model_type), config_cls,
                                                            dict(heads))))
        elif self.kind == "initializers":
            def register(fn, name):
                found.append((str(name), fn))
        else:
            def register(obj, name=None):
                if name is None:
                    name = getattr(obj, "name", None) if self.kind == "backends" else None
                    name = name or getattr(obj, "__name__", None)
                if not name:
                    raise TypeError(f"register({obj!r}): pass name=, the object has no __name__")
                found.append((str(name), obj))
        return register

    def _fill(self) -> None:
        pm = plugins.manager()
        entries: dict[str, _Entry] = {}
        conflicts: dict[str, list[str]] = {}
        for impl in getattr(pm.hook, self.hook).get_hookimpls():
            found: list = []
            callback = self._register_callback(found)
            try:
                impl.function(**{arg: callback for arg in impl.argnames})
            except Exception as e:
                dist = plugins.plugin_info(impl.plugin_name)["distribution"]
                plugins.report_failure(dist, f"failed to register its {self.kind}", e)
                continue
            for name, obj in found:
                if name in entries and entries[name].obj is not obj:
                    conflicts.setdefault(name, [entries[name].plugin]).append(impl.plugin_name)
                    continue
                entries[name] = _Entry(obj, impl.plugin_name)
        self._entries, self._conflicts = entries, conflicts
        self._generation = plugins.generation()
        for name, owners in conflicts.items():
            warnings.warn(self._conflict_message(name, owners), plugins.PluginWarning,
                          stacklevel=4)

    def _current(self) -> dict[str, _Entry]:
        if self._generation != plugins.generation():
            self._fill()
        return self._entries

    def reload(self) -> None:
        """Discover plugins again (sees distributions installed since the process started)."""
        plugins.reload()
        self._fill()

    # ------------------------------------------------------------------- lookup
    def _conflict_message(self, name: str, owners: list[str]) -> str:
        dists = [f"{plugins.plugin_info(o)['distribution']} (plugin {o!r})" for o in owners]
        return (f"{self.noun} {name!r} is registered by more than one plugin: "
                f"{' and '.join(dists)}; uninstall one, or select plugins with DLFREE_PLUGINS")

    def _entry(self, name: str) -> _Entry:
        entries = self._current()
        if name in self._conflicts:
            raise PluginError(self._conflict_message(name, self._conflicts[name]))
        try:
            return entries[name]
        except KeyError:
            raise PluginError(self._unknown_message(name)) from None

    def _unknown_message(self, name: str) -> str:
        known = self.names()
        message = f"unknown {self.noun} {name!r}"
        dist = FIRST_PARTY.get(self.kind, {}).get(name)
        if dist is not None:
            return (f"{message}: it is provided by the distribution {dist!r}, which is not "
                    f"installed (or was not loaded); install it with: pip install {dist}")
        candidates = known + list(FIRST_PARTY.get(self.kind, {}))
        same_letters = [c for c in candidates if c.lower() == name.lower()]
        close = same_letters + [c for c in difflib.get_close_matches(name, candidates, n=3,
                                                                     cutoff=0.6)
                                if c not in same_letters]
        if close:
            hints = [c if c in known else f"{c} (from {FIRST_PARTY[self.kind][c]}, not "
                     "installed)" for c in close]
            message += f"; did you mean {', '.join(hints)}?"
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        return message + (f" Registered {self.kind}: {shown}" if known else
                          f" No {self.kind} are registered: install a plugin that provides them")

    def get(self, name: str):
        """The object registered under `name`."""
        return self._entry(name).obj

    def create(self, name: str, **config):
        """Instantiate the object registered under `name` with `config`."""
        obj = self.get(name)
        if self.kind == "architectures":
            return obj.config_cls(**config)
        return obj(**config)

    def names(self) -> list[str]:
        return sorted(set(self._current()) - set(self._conflicts))

    def provider(self, name: str) -> dict:
        """Which plugin registered `name`: its distribution and version."""
        entry = self._entry(name)
        return {"plugin": entry.plugin, **plugins.plugin_info(entry.plugin)}

    def items(self) -> list[tuple[str, Any]]:
        entries = self._current()
        return [(n, entries[n].obj) for n in self.names()]

    def __contains__(self, name: str) -> bool:
        return name in self._current() and name not in self._conflicts

    def __iter__(self):
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


backends = Registry("backends", "backend")
layers = Registry("layers", "layer")
losses = Registry("losses", "loss")
initializers = Registry("initializers", "initializer")
optimizers = Registry("optimizers", "optimizer")
schedulers = Registry("schedulers", "scheduler")
metrics = Registry("metrics", "metric")
architectures = Registry("architectures", "architecture")
callbacks = Registry("callbacks", "callback")

ALL = (backends, layers, losses, initializers, optimizers, schedulers, metrics, architectures,
       callbacks)
