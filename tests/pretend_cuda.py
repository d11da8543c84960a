"""A CUDA device for tests on a CPU-only torch: tensors that say ``cuda:0`` and compute on the CPU.

torch's ``FakeTensorMode`` gives ``cuda`` tensors without data on a CPU build, but it cannot run
``.to("cuda")`` there (torch 2.13: "PyTorch is not linked with support for cuda devices"), nor any
code that reads a value back (``.item()``, ``.tolist()``: beam search decides on the host). So this
module pretends differently: a :class:`CudaTensor` wraps a real CPU tensor, reports device
``cuda:0``, and runs every operation on its CPU data. What the first GPU run of a project dies of
shows here the same way, with real values to compare against the CPU path:

- **a tensor on the wrong device**: an operation mixing a ``cuda`` tensor with a CPU tensor of one
  or more dimensions raises :class:`DeviceMismatch` naming the operation and the project's line
  (CUDA itself accepts 0-dimensional CPU tensors as scalars, and so does this);
- **host synchronisation**: every read of a device value on the host (``.item()``, ``.tolist()``,
  ``.cpu()``, ``float()``, ``if tensor``, ``nonzero``, boolean-mask indexing, ``Event.synchronize``)
  and every copy between host and device is recorded in :attr:`PretendCuda.events` with the line
  of the project that caused it;
- **host tensors**: every operation whose inputs and outputs are all on the CPU is recorded too
  (``kind == "host"``), and with ``strict`` any host tensor made outside the listed functions raises at
  once, naming the line;
- **autocast**: ``torch.autocast("cuda", torch.bfloat16)`` runs as the CPU's bf16 autocast over the
  wrapped data, so a dtype mismatch under bf16 shows and the products run in bf16 (CPU autocast's
  lists differ from CUDA's in a few operations: :func:`_cuda_autocast_on_cpu`).

A :class:`CudaTensor`'s C++ side is a CPU tensor (autograd's engine needs a CUDA device guard and
stream that a CPU build lacks), so three things are adapted while the context is open: the
optimizers' grouping by device reads ``cuda:0``, ``torch.inference_mode`` runs as ``no_grad``, and
0-dimensional CPU tensors that torch's own C++ makes are not recorded. The CUDA runtime's host-side
calls (``torch.cuda.Event``, ``synchronize``, ``is_available``, device count, name and capability,
memory statistics) are replaced: the device is one H100 (compute capability 9.0). What this cannot
show is what only the GPU decides: the attention kernel chosen (the CPU's runs), speed, memory, NCCL.

Modes are thread-local: the project's one thread pool that handles tensors, the training batches'
prefetcher (:mod:`aiayn.train.prefetch`), runs its tasks inside them (:func:`pooled_threads_in`).
"""

from __future__ import annotations

import contextlib
import threading
import traceback
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import aiayn.train.prefetch as prefetch

CUDA = torch.device("cuda", 0)
SRC = str(Path(__file__).resolve().parents[1] / "src") + "/"
CARD = "NVIDIA H100 80GB HBM3"

# Operations whose output size depends on device values: CUDA copies a count to the host first.
SYNCING_OPS = {
    torch.ops.aten._local_scalar_dense.default: "read a value (.item(), float(), int(), bool(), if tensor)",
    torch.ops.aten.nonzero.default: "nonzero (output size from device values)",
    torch.ops.aten.masked_select.default: "masked_select (output size from device values)",
    torch.ops.aten.repeat_interleave.Tensor: "repeat_interleave without output_size",
}


class DeviceMismatch(RuntimeError):
    """A ``cuda`` tensor met a CPU tensor of one or more dimensions in one operation."""


class HostTensorError(RuntimeError):
    """``strict``: a tensor was made on the CPU outside the functions allowed to."""


@dataclass(frozen=True)
class Event:
    """What happened between host and device: ``kind`` is ``sync`` (the host waits for the device),
    ``to_host`` / ``to_device`` (a copy; ``blocking`` says whether the host waits), or ``host`` (a
    tensor made or computed on the CPU); ``where`` is the project's line (``path:line function``)."""

    kind: str
    what: str
    where: str
    blocking: bool = True


def project_frame(stack: list[traceback.FrameSummary] | None = None) -> str:
    """``aiayn/x/y.py:LINE function`` of the innermost frame in ``src/``, else of the innermost frame
    outside torch and this file (a test's own line). A comprehension or lambda is named by the
    function around it."""
    stack = stack if stack is not None else traceback.extract_stack()
    for i in range(len(stack) - 1, -1, -1):
        frame = stack[i]
        if frame.filename.startswith(SRC):
            outer = [f for f in stack[: i + 1] if f.filename == frame.filename and not f.name.startswith("<")]
            return f"{frame.filename[len(SRC) :]}:{frame.lineno} {outer[-1].name if outer else frame.name}"
    for frame in reversed(stack):
        if "/torch/" not in frame.filename and frame.filename != __file__ and "/contextlib.py" not in frame.filename:
            return f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"
    return "?"


class CudaTensor(torch.Tensor):
    """A tensor on ``cuda:0`` whose data is the CPU tensor :attr:`elem`."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False) -> "CudaTensor":
        out = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=elem.device,
            requires_grad=requires_grad,
        )
        out.elem = elem
        return out

    # Python reads cuda:0; torch's C++ sees the CPU (autograd's engine on a CPU-only build has no CUDA
    # device guard or stream to work with).
    @property
    def device(self) -> torch.device:
        return CUDA

    @property
    def is_cuda(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"CudaTensor({self.elem!r})"

    def __reduce_ex__(self, protocol):
        """Pickled (``torch.save``) as its data: a GPU's checkpoint holds plain tensors too."""
        return self.elem.__reduce_ex__(protocol)

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return PretendCuda.active().on_device(func, args, kwargs or {})


def _unwrap(tree):
    return pytree.tree_map_only(CudaTensor, lambda t: t.elem, tree)


def _is_cuda(device) -> bool:
    return device is not None and torch.device(device).type == "cuda"


class _Factories(TorchFunctionMode):
    """Host-side calls: tensors made or moved onto ``cuda``, pinned memory (which a CPU build cannot
    allocate: the tensor is kept unpinned and remembered as pinned)."""

    def __init__(self, runtime: "PretendCuda"):
        super().__init__()
        self.runtime = runtime

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        runtime = self.runtime
        if func in (torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu):
            return runtime.move(func, args, kwargs)
        if func is torch.Tensor.pin_memory:
            if isinstance(args[0], CudaTensor):
                raise RuntimeError(f"pin_memory() of a cuda tensor ({project_frame()})")
            return runtime.pinned(args[0])
        if func is torch.Tensor.is_pinned:
            return runtime.is_pinned(args[0])
        if func is torch.Tensor.tolist and isinstance(args[0], CudaTensor):
            runtime.record("to_host", f".tolist() {tuple(args[0].shape)} {args[0].dtype}")
            return args[0].elem.tolist()
        if func is torch.Tensor.numpy and isinstance(args[0], CudaTensor):
            raise TypeError(f"can't convert cuda:0 device type tensor to numpy ({project_frame()})")
        pin = kwargs.pop("pin_memory", False)
        if _is_cuda(kwargs.get("device")):
            if pin:
                raise RuntimeError(f"{func.__name__}: pin_memory=True with device cuda ({project_frame()})")
            kwargs["device"] = "cpu"
            grad = kwargs.pop("requires_grad", False)
            with runtime.internal():
                out = func(*args, **kwargs)
                out = out.detach() if isinstance(out, torch.Tensor) else out
            return CudaTensor(out, requires_grad=grad) if isinstance(out, torch.Tensor) else out
        out = func(*args, **kwargs)
        return runtime.pinned(out) if pin else out


class _Watch(TorchDispatchMode):
    """Every operation: device mismatches refused, host-only operations recorded."""

    def __init__(self, runtime: "PretendCuda"):
        super().__init__()
        self.runtime = runtime

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if any(isinstance(t, CudaTensor) for t in tensors):
            strays = [t for t in tensors if not isinstance(t, CudaTensor) and t.dim() > 0]
            if strays and func not in (torch.ops.aten.copy_.default, torch.ops.aten._to_copy.default):
                raise DeviceMismatch(
                    f"{func}: a cuda tensor and a CPU tensor of shape {tuple(strays[0].shape)} "
                    f"in one operation ({project_frame()})"
                )
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        # 0-dimensional CPU tensors mix with cuda ones (as scalars): torch's own C++ makes them with the
        # data's (CPU) options, where on a GPU they would be cuda tensors, so they are not recorded.
        if any(isinstance(t, torch.Tensor) and t.dim() > 0 for t in pytree.tree_leaves(out)):
            self.runtime.host(func)
        return out


class PretendCuda:
    """The context in which ``cuda`` is a device: see the module docstring.

    ``strict``: functions (``"aiayn/decode/beam.py _to_host"``: path under src/ and function name)
    that may make tensors on the CPU; any other host tensor made in the project's code raises
    :class:`HostTensorError` at once. None: host tensors are recorded only.
    """

    _current: "PretendCuda | None" = None

    def __init__(self, strict: Iterable[str] | None = None):
        self.events: list[Event] = []
        self.strict = None if strict is None else set(strict)
        self._pins: dict[int, weakref.ref] = {}  # id -> the tensor (tensors compare by value, not identity)
        self._patches = contextlib.ExitStack()
        self._lock = threading.Lock()
        self._local = threading.local()  # depth of this module's own operations, not recorded

    @classmethod
    def active(cls) -> "PretendCuda":
        if cls._current is None:
            raise RuntimeError("a CudaTensor was used outside PretendCuda")
        return cls._current

    # ---- the context --------------------------------------------------------------------------

    def __enter__(self) -> "PretendCuda":
        if PretendCuda._current is not None:
            raise RuntimeError("PretendCuda is already open")
        PretendCuda._current = self
        self._runtime_patches()
        # Module.to swaps each parameter for its cuda copy (as for DTensor) instead of setting .data
        swap = torch.__future__.get_swap_module_params_on_conversion()
        torch.__future__.set_swap_module_params_on_conversion(True)
        self._patches.callback(torch.__future__.set_swap_module_params_on_conversion, swap)
        self._patches.enter_context(self.thread())
        self._patches.enter_context(pooled_threads_in(self, prefetch))
        return self

    def __exit__(self, *exc) -> None:
        self._patches.close()
        PretendCuda._current = None

    @contextlib.contextmanager
    def thread(self) -> Iterator[None]:
        """The modes on the calling thread (enter it on each worker thread of the code under test)."""
        with _Factories(self), _Watch(self):
            yield

    def _runtime_patches(self) -> None:
        runtime = self

        class CudaEvent:
            def record(self, stream=None) -> None:
                pass

            def synchronize(self) -> None:
                runtime.record("sync", "Event.synchronize")

        patches = {
            (torch.cuda, "Event"): CudaEvent,
            (torch.cuda, "synchronize"): lambda device=None: self.record("sync", "torch.cuda.synchronize"),
            (torch.cuda, "get_device_capability"): lambda device=None: (9, 0),
            (torch.cuda, "get_device_name"): lambda device=None: CARD,
            (torch.cuda, "is_bf16_supported"): lambda including_emulation=True: True,
            (torch.cuda, "max_memory_allocated"): lambda device=None: 0,
            (torch.cuda, "memory_reserved"): lambda device=None: 0,
            (torch.cuda, "mem_get_info"): lambda device=None: (80 * 2**30, 80 * 2**30),
            (torch.cuda, "reset_peak_memory_stats"): lambda device=None: None,
            (torch.cuda, "current_device"): lambda: 0,
            (torch.cuda, "is_available"): lambda: True,
            (torch.cuda, "device_count"): lambda: 1,
            (torch, "autocast"): _cuda_autocast_on_cpu,
            (torch._C, "_InferenceMode"): _inference_as_no_grad,
            (torch.optim.Optimizer, "_group_tensors_by_device_and_dtype"): staticmethod(_grouped_on_cuda),
        }
        for (owner, name), value in patches.items():
            self._patches.callback(setattr, owner, name, getattr(owner, name))
            setattr(owner, name, value)

    # ---- records ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def internal(self) -> Iterator[None]:
        """Operations of this module's own (the CPU data behind a factory or a copy): not recorded."""
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1

    def record(self, kind: str, what: str, blocking: bool = True) -> None:
        with self._lock:
            self.events.append(Event(kind, what, project_frame(), blocking))

    def host(self, func) -> None:
        """An operation of CPU tensors only; refused under ``strict`` outside the allowed functions."""
        if getattr(self._local, "depth", 0):
            return
        where = project_frame()
        if self.strict is not None and where.startswith("aiayn/"):
            path, function = where.split(":")[0], where.split(" ")[-1]
            if f"{path} {function}" not in self.strict:
                raise HostTensorError(f"{func} made a tensor on the CPU at {where}")
        with self._lock:
            self.events.append(Event("host", str(func), where))

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def waits(self) -> list[Event]:
        """The events where the host waits for the device: reads of a value and blocking copies to the host."""
        return [e for e in self.events if e.kind == "sync" or (e.kind == "to_host" and e.blocking)]

    def clear(self) -> None:
        self.events.clear()

    # ---- pinned memory and copies -------------------------------------------------------------

    def pinned(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor``, remembered as page-locked (a CPU build cannot allocate such memory)."""
        with self._lock:
            self._pins = {k: r for k, r in self._pins.items() if r() is not None}
            self._pins[id(tensor)] = weakref.ref(tensor)
        return tensor

    def is_pinned(self, tensor: torch.Tensor) -> bool:
        ref = self._pins.get(id(tensor))
        return ref is not None and ref() is tensor

    def move(self, func, args, kwargs) -> torch.Tensor:
        """``Tensor.to`` / ``.cuda()`` / ``.cpu()``: a host tensor moved to ``cuda`` becomes a
        :class:`CudaTensor` (asynchronous from pinned memory with ``non_blocking``), a device tensor
        moved to the CPU a plain copy of its data (the host waits); anything else goes on."""
        tensor = args[0]
        if func is torch.Tensor.cuda:
            device, dtype, non_blocking = CUDA, None, kwargs.get("non_blocking", False)
        elif func is torch.Tensor.cpu:
            device, dtype, non_blocking = torch.device("cpu"), None, False
        else:
            device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args[1:], **kwargs)
        on_device = isinstance(tensor, CudaTensor)
        if device is None or not (on_device or _is_cuda(device)):
            return func(*args, **kwargs)
        if on_device and _is_cuda(device):  # already there (torch would initialise CUDA to find out)
            copy = kwargs.get("copy", False)
            return tensor.to(dtype or tensor.dtype, copy=copy) if dtype or copy else tensor
        if tensor.requires_grad and torch.is_grad_enabled():
            raise RuntimeError(f"a differentiable copy between devices is not supported here ({project_frame()})")
        dtype = dtype or tensor.dtype
        if on_device:
            self.record("to_host", f"{tuple(tensor.shape)} {tensor.dtype}", blocking=not non_blocking)
            with self.internal():
                return tensor.elem.to(dtype=dtype, copy=True)
        asynchronous = non_blocking and self.is_pinned(tensor)
        self.record("to_device", f"{tuple(tensor.shape)} {tensor.dtype}", blocking=not asynchronous)
        with self.internal():
            data = tensor.detach().to(dtype=dtype, copy=True)
        return CudaTensor(data, requires_grad=tensor.requires_grad)

    # ---- operations on the device -------------------------------------------------------------

    def on_device(self, func, args, kwargs):
        """Run ``func`` on the CPU data of its ``cuda`` arguments; results back on ``cuda`` (an in-place
        operation returns its own argument), except copies to the host."""
        if func in SYNCING_OPS:
            self.record("sync", SYNCING_OPS[func])
        if func is torch.ops.aten.index.Tensor and any(i is not None and i.dtype == torch.bool for i in args[1]):
            self.record("sync", "boolean-mask indexing (output size from device values)")
        if func is torch.ops.aten._to_copy.default:  # a device change was taken by _Factories.move: what
            kwargs = {k: v for k, v in kwargs.items() if k != "device"}  # comes here is C++ passing the CPU
        if func is torch.ops.aten.copy_.default and not isinstance(args[0], CudaTensor):
            non_blocking = bool(args[2]) if len(args) > 2 else kwargs.get("non_blocking", False)
            asynchronous = self.is_pinned(args[0]) and non_blocking
            self.record("to_host", f"{tuple(args[1].shape)} {args[1].dtype}", blocking=not asynchronous)
            return args[0].copy_(args[1].elem)
        if func is torch.ops.aten.copy_.default and not isinstance(args[1], CudaTensor):
            self.record("to_device", f"{tuple(args[1].shape)} {args[1].dtype}")
        out = func(*_unwrap(args), **_unwrap(kwargs))
        return self._wrap(func, args, kwargs, out)

    def _wrap(self, func, args, kwargs, out):
        inputs = {id(t.elem): t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, CudaTensor)}

        def wrap(t: torch.Tensor) -> torch.Tensor:
            if id(t) in inputs and func._schema.is_mutable:
                return inputs[id(t)]
            return CudaTensor(t)

        return pytree.tree_map_only(torch.Tensor, wrap, out)


def _cuda_autocast_on_cpu(device_type: str, *args, **kwargs):
    """``torch.autocast``, with ``cuda`` run as the CPU's autocast: the data of a :class:`CudaTensor` is
    on the CPU, so CPU autocast's casts are the ones that apply to it. Its lists differ from CUDA's in
    a few operations (CUDA runs layer norm and softmax in fp32 under autocast; the CPU's list does
    not name them), so dtypes after those can differ from a GPU's."""
    return _AUTOCAST("cpu" if device_type == "cuda" else device_type, *args, **kwargs)


_AUTOCAST = torch.autocast


def _inference_as_no_grad(mode: bool):
    """``torch.inference_mode`` runs as ``no_grad``: a view of a wrapper tensor made in inference mode
    fails ("Cannot set version_counter for inference tensor"). Both record no graph."""
    return torch.no_grad() if mode else contextlib.nullcontext()


_GROUP = torch.optim.Optimizer._group_tensors_by_device_and_dtype


def _grouped_on_cuda(tensorlistlist, with_indices=False):
    """The optimizers' grouping by (device, dtype), whose C++ reads the CPU from a :class:`CudaTensor`:
    such groups keyed by ``cuda:0``, as on a GPU (fused Adam then moves nothing between devices)."""
    groups = _GROUP(tensorlistlist, with_indices)
    return {
        ((CUDA if any(isinstance(t, CudaTensor) for t in lists[0]) else device), dtype): (lists, indices)
        for (device, dtype), (lists, indices) in groups.items()
    }


@contextlib.contextmanager
def pooled_threads_in(runtime: PretendCuda, module) -> Iterator[None]:
    """``module.ThreadPoolExecutor`` replaced by one that runs each task inside ``runtime``'s modes on
    its worker thread (modes are thread-local)."""
    original = module.ThreadPoolExecutor

    class Executor(original):
        def submit(self, fn, /, *args, **kwargs):
            def task():
                with runtime.thread():
                    return fn(*args, **kwargs)

            return super().submit(task)

    module.ThreadPoolExecutor = Executor
    try:
        yield
    finally:
        module.ThreadPoolExecutor = original
