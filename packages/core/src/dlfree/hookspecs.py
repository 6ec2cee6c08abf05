"""The hooks a dl.free plugin can implement.

Register-style hooks: the host passes `register`, and the plugin calls it once per
thing it provides. An implementation may accept a subset of a hook's arguments. A plugin
adds hooks of its own through `dlfree_add_hookspecs` (dlfree-train's training events).
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("dlfree")
hookimpl = pluggy.HookimplMarker("dlfree")


@hookspec(historic=True)
def dlfree_add_hookspecs(pluginmanager):
    """Call `pluginmanager.add_hookspecs(module_or_class)` to add hooks of your own (their
    functions marked `@dlfree.hookspec`), as dlfree-train adds the training events. Called
    once per plugin, also for plugins registered after the first registry access."""


@hookspec
def dlfree_register_backends(register):
    """Call `register(BackendClass)` for each array backend (a `dlfree.backends.Backend`)."""


@hookspec
def dlfree_register_layers(register):
    """Call `register(ModuleClass, name=None)` for each layer; the name defaults to the class's."""


@hookspec
def dlfree_register_losses(register):
    """Call `register(LossClass, name=None)` for each loss module."""


@hookspec
def dlfree_register_initializers(register):
    """Call `register(fn, name)` for each weight initializer (a function filling a tensor)."""


@hookspec
def dlfree_register_optimizers(register):
    """Call `register(OptimizerClass, name=None)` for each optimizer."""


@hookspec
def dlfree_register_schedulers(register):
    """Call `register(SchedulerClass, name=None)` for each learning-rate scheduler."""


@hookspec
def dlfree_register_metrics(register):
    """Call `register(MetricClass, name=None)` for each metric."""


@hookspec
def dlfree_register_architectures(register):
    """Call `register(model_type, config_cls, {head: ModelClass})` for each model family."""


@hookspec
def dlfree_register_callbacks(register):
    """Call `register(CallbackClass, name=None)` for each training-loop callback."""


@hookspec
def dlfree_register_onnx_ops(register):
    """Call `register(converter, op_name)` for each traced op your plugin can export to ONNX:
    `converter(ctx)` emits ONNX nodes for one graph node through `ctx`
    (a `dlfree.onnx.Context`) and returns the name of the value it computed."""


@hookspec
def dlfree_register_commands(cli):
    """Add subcommands to the `dlfree` command: `cli` is an argparse subparsers object;
    set `func=` on your parser (`parser.set_defaults(func=run)`); `run(args)` is called."""
