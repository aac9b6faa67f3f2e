"""Options and output shared by every analysing command (analyze, plot, llm, torch, hf, onnx, ...).

``add_device_option`` / ``add_output_options`` declare the flags; ``check_outputs``
validates every output path before any work starts (nothing half-written);
``emit`` prints the terminal table and writes every requested file.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from roofline.core.errors import RooflineError
from roofline.core.fileio import check_writable
from roofline.engine.analysis import Analysis
from roofline.hardware.calibration import Calibration
from roofline.hardware.device import Device
from roofline.words.summary import Summary

EXAMPLE_HELP = argparse.RawDescriptionHelpFormatter


def count_arg(text: str) -> int:
    """An argparse type for counts such as ``--batch``: a whole number >= 1, with one wording for '0', '-3'
    and 'x' ("argument --batch: must be a whole number >= 1, got '0'").

    >>> count_arg("16")
    16
    """
    if re.fullmatch(r"\s*[0-9]+\s*", str(text)) and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")


def count_or_max_arg(text: str) -> int | str:
    """:func:`count_arg`, or 'max' (the largest batch that fits), in the same wording."""
    if str(text).strip().lower() == "max":
        return "max"
    try:
        return count_arg(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1 or 'max', got {text!r}") from None


def add_device_option(p: argparse.ArgumentParser, required: bool = True, default: str | None = None) -> None:
    p.add_argument("--device", "-d", required=required and default is None, default=default,
                   help="catalog name (see 'roofline devices'), a device JSON file, or 'local' (the last 'roofline bench')")


def add_output_options(p: argparse.ArgumentParser, group_by: tuple[str, ...] = ()) -> None:
    p.add_argument("-o", "--output", metavar="CHART", help="write the roofline chart (.png, .svg or .pdf)")
    p.add_argument("--json", metavar="FILE", help="write the analysis as JSON (roofline.analysis/2)")
    p.add_argument("--csv", metavar="FILE", help="write the per-op results as CSV")
    p.add_argument("--html", metavar="FILE", help="write the interactive HTML report")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows in the terminal table (default 20)")
    p.add_argument("--verbose", "-v", action="store_true", help="every assumption in full (default: one line)")
    p.add_argument("--advice", action="store_true",
                   help="print the levers with their computed effects, other catalog devices included "
                        "(the HTML report always has the levers on this device)")
    p.add_argument("--forecast", action="store_true",
                   help="also forecast each op's real time beside its bound: achievable roofs, the device's "
                        "calibration ('roofline calibrate') and its per-op overhead floor")
    p.add_argument("--calibration", metavar="FILE",
                   help="with --forecast: a calibration file ('roofline calibrate --out') for this device")
    if group_by:
        p.add_argument("--group-by", choices=group_by, default=None, help="table rows: one per group instead of per op")
        p.add_argument("--depth", type=int, default=None, metavar="N", help="with --group-by module: module path depth")


def add_tf32_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--tf32 on|off|default``: which fp32 matrix-unit ops a GPU with TF32 runs on its tf32 roof
    (:data:`roofline.engine.analysis.TF32_KINDS`)."""
    p.add_argument("--tf32", choices=("default", "on", "off"), default="default",
                   help="fp32 convolutions/matmuls on a GPU with TF32: default = PyTorch's (convolutions on the "
                        "tf32 roof, cudnn.allow_tf32=True; matmuls on fp32, cuda.matmul.allow_tf32=False), "
                        "on = both on tf32, off = both on fp32")


def llm_phase_default() -> str:
    """The LLM phase a command runs when ``--phase`` is not given: the library's own default
    (:class:`roofline.llm.spec.LLMSpec`), so ``llm`` and ``compare`` cannot drift apart."""
    from dataclasses import fields

    from roofline.llm.spec import LLMSpec

    default = next(f.default for f in fields(LLMSpec) if f.name == "phase")
    assert isinstance(default, str)
    return default


def add_phase_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--phase``, one definition for ``roofline llm`` and ``roofline compare``: choices and default."""
    from roofline.llm.spec import PHASES

    default = llm_phase_default()
    p.add_argument("--phase", choices=PHASES, default=default,
                   help=f"default {default}" + (" (prefill + decode)" if default == "generate" else ""))


def add_llm_model_options(p: argparse.ArgumentParser, *, kv_reads: bool = True, fusions_note: str = "") -> None:
    """``--rbits``, ``--fusions`` (and ``--kv-reads``), one definition for ``roofline serve`` and ``roofline llm``.

    The values go to :func:`roofline.llm.spec.make_spec` unparsed (None: not given), which checks them: a bad
    one is its one-line error.  ``fusions_note``: the command's own word on the default (serve's ``--engine``)."""
    from roofline.llm.table import FUSIONS, KV_READS

    p.add_argument("--rbits", metavar="BITS", help="residual-stream precision where it differs from --abits (norms, "
                   "GEMM outputs, TP all-reduce): a float format no narrower than --abits, fp32, bf16, fp16 or fp8 "
                   "(a bare 8 would be int8: give fp8); an FP8 checkpoint of a float16 model: --abits fp8 --rbits fp16")
    p.add_argument("--fusions", metavar="NAME[,NAME...]", help=f"kernel fusions the engine runs: {', '.join(FUSIONS)} "
                   f"(default none; '' for none{fusions_note})")
    if kv_reads:
        p.add_argument("--kv-reads", default=KV_READS[0], metavar="|".join(KV_READS),
                       help=f"how attention reads a KV head its query heads share: {KV_READS[0]}, once per group "
                            f"(FlashAttention, XQA; the default), or {KV_READS[1]}, once per query head "
                            "(TensorRT-LLM v0.5's masked MHA)")


def add_moe_options(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--moe-load`` and ``--mtp``, one definition for ``llm``, ``plan``, ``serve`` and ``compare``; the values go to
    :func:`roofline.llm.spec.make_spec` (or ``TrainingRun.of``), which refuses ``--moe-load`` on a dense model."""
    from roofline.llm.moe_load import MOE_LOADS

    p.add_argument("--moe-load", choices=MOE_LOADS, default=MOE_LOADS[0],
                   help="MoE: rows of the grouped expert GEMMs' slowest group: balanced, n*k/E tokens per expert "
                        "(default), or expected-max, the expected most loaded expert under uniform top-k routing "
                        "(more time, the same FLOPs)")
    p.add_argument("--mtp", type=int, default=0, metavar="N",
                   help="multi-token prediction modules run with the model (DeepSeek-V3's num_nextn_predict_layers: "
                        "1); default 0")


def add_ep_options(p: argparse.ArgumentParser) -> None:
    """``--ep`` and ``--dp-attention`` (:mod:`roofline.llm.expert_parallel`), one definition for ``roofline serve``
    and ``roofline llm``; checked against the model by :func:`roofline.llm.spec.make_spec` (one line)."""
    p.add_argument("--ep", type=int, default=1, metavar="N", help="expert parallelism: the routed experts split N "
                   "ways over the replica's --tp devices, each expert tp/N-way tensor-parallel (N divides tp and the "
                   "experts; default 1)")
    p.add_argument("--dp-attention", action="store_true", help="attention data-parallel: attention weights "
                   "replicated, the sequences split over the --tp devices, the experts expert-parallel over all of "
                   "them with a DeepEP dispatch/combine per MoE layer (SGLang --enable-dp-attention)")


#: what each command-line quantity kind is, for :func:`cli_quantity`: (unit, example prefix)
_CLI_UNITS = {"flops": ("FLOP/s", "G"), "bandwidth": ("B/s", "G")}


def cli_quantity(text: str, kind: str, option: str) -> float:
    """A FLOP/s or B/s quantity typed on the command line (``kind``: "flops" or "bandwidth"); its unit is required.

    Files keep their documented SI base units (a bare number there is FLOP/s or B/s), but on the
    command line ``--bandwidth 10`` is far more likely a slip for 10 GB/s than a wish for 10 B/s:
    a number without a unit (an SI/IEC prefix alone is no unit) is refused, naming the accepted forms.

    >>> cli_quantity("10 GB/s", "bandwidth", "--bandwidth")
    10000000000.0
    >>> cli_quantity("10", "bandwidth", "--bandwidth")
    Traceback (most recent call last):
    roofline.core.errors.RooflineError: --bandwidth '10': give a unit, e.g. '10 GB/s' (a bare number would be 10 B/s)
    """

    from roofline.core.units import IEC, SI, format_bandwidth, format_flops, parse_quantity

    unit, example_prefix = _CLI_UNITS[kind]
    value = parse_quantity(text, kind, field=option)  # garbage, a wrong unit: parse_quantity's message
    m = re.fullmatch(r"\s*(?P<num>.*?\d\.?)(?P<tail>[A-Za-z/\s]*)", text)
    tail = "".join(m.group("tail").split()) if m else ""
    if tail and tail not in SI and tail not in IEC:
        return value  # a unit was given (parse_quantity checked it is the right kind)
    num = m.group("num") if m else text.strip()
    if tail:  # a prefix alone: '1T'
        raise RooflineError(f"{option} {text!r}: give a unit, e.g. '{num} {tail}{unit}'")
    shown = format_flops(value) if kind == "flops" else format_bandwidth(value)
    if "e" in num.lower():  # '1e12': already scaled, so the base unit
        example_prefix = ""
    raise RooflineError(f"{option} {text!r}: give a unit, e.g. '{num} {example_prefix}{unit}' "
                        f"(a bare number would be {shown})")


def resolve(spec: str) -> Device:
    from roofline.bench.resolve import resolve_device

    return resolve_device(spec)


def forecast_option(analysis: Analysis, args: argparse.Namespace) -> Analysis:
    """``analysis`` with its forecast when ``--forecast`` asks (the ``--calibration`` file applied)."""
    if not getattr(args, "forecast", False):
        return analysis
    from roofline.engine.analysis import with_forecast

    cal = calibration_option(args)
    if cal is None and analysis.forecast is not None:
        return analysis
    return with_forecast(analysis, cal, where=getattr(args, "calibration", None) or "calibration")


def calibration_option(args: argparse.Namespace) -> Calibration | None:
    """The ``--calibration`` file, read and checked (one line for a bad one), or None."""
    path = getattr(args, "calibration", None)
    if not path:
        return None
    from roofline.core.fileio import read_json
    from roofline.core.text import shown_path
    from roofline.hardware.calibration import load_calibration

    return load_calibration(read_json(path), shown_path(path))


def check_outputs(args: argparse.Namespace) -> None:
    """Validate output paths and extensions (and a ``--calibration`` file) before doing any work."""
    from roofline.render import check_chart_path

    if getattr(args, "calibration", None) and not getattr(args, "forecast", False):
        raise RooflineError("--calibration is read by --forecast; add --forecast")
    calibration_option(args)

    if getattr(args, "output", None):
        check_chart_path(args.output)
    for attr, ext in (("json", ".json"), ("csv", ".csv"), ("html", ".html")):
        path = getattr(args, attr, None)
        if path:
            if Path(path).suffix.lower() not in (ext, ".htm" if ext == ".html" else ext):
                raise RooflineError(f"--{attr} expects a {ext} file, got {path!r}")
            check_writable(path)


def emit(analysis: Analysis, args: argparse.Namespace, *, title: str | None = None, more_text: str = "",
         more_outputs: Sequence[tuple[str, str, bytes]] = (), html_after: Sequence[str] = ()) -> None:
    """Terminal table (and the LLM facts, the advice when asked) + every requested output file.

    The facts are summarised once (:func:`roofline.words.summary.summarize`) and every renderer reads them.
    Advice is computed here, at the edge: levers on this device for the HTML report, other catalog
    devices too only with ``--advice``.  All or nothing: the terminal text and every output are rendered
    before anything is printed or written (:func:`write_outputs`); ``more_text`` (printed after the table) and
    ``more_outputs`` (a command's own files, (label, path, bytes)) join them, written with them or not at all.
    ``html_after``: more sections of the HTML report, rendered HTML (the trace analyses), placed after the
    analysis's own.
    """
    from roofline.core.text import display
    from roofline.render import terminal
    from roofline.words.summary import summarize

    analysis = forecast_option(analysis, args)
    advice = None
    if getattr(args, "advice", False) or getattr(args, "html", None):
        from roofline.words.advice import advise

        advice = advise(analysis, devices=bool(getattr(args, "advice", False)))
    summary = summarize(analysis, advice=advice)
    group_by = getattr(args, "group_by", None)
    # the terminal leads with the answer (the headline, which names the workload and the device): no title line
    # above it to repeat them; files keep ``title`` as their heading
    parts = [terminal.render(analysis, top=getattr(args, "top", 20), group_by=group_by,
                             depth=getattr(args, "depth", None), summary=summary,
                             verbose=getattr(args, "verbose", False))]
    if summary.llm is not None:
        parts.append(terminal.fit_width(terminal.llm_text(summary.llm) + "\n"))
    if getattr(args, "advice", False) and advice is not None:
        parts.append("advice:\n" + terminal.fit_width("".join(f"  {display(line, 1024)}\n" for line in advice.lines())))
    outputs = [*render_outputs(analysis, args, title=title, summary=summary, html_after=html_after), *more_outputs]
    sys.stdout.write("".join([*parts, more_text]))
    write_all(outputs)


#: the output options, in the order they are rendered and reported: (attribute, label)
OUTPUTS = (("output", "chart"), ("json", "json"), ("csv", "csv"), ("html", "html"))


def render_outputs(analysis: Analysis, args: argparse.Namespace, *, title: str | None = None,
                   summary: Summary | None = None, html_after: Sequence[str] = ()) -> list[tuple[str, str, bytes]]:
    """Every requested output, rendered in memory by the renderer its extension names: (label, path, bytes);
    ``html_after``: rendered sections the HTML report adds after the analysis's own (:func:`emit`)."""
    from roofline.render import renderer_for

    out = []
    for attr, label in OUTPUTS:
        path = getattr(args, attr, None)
        if path:
            r = renderer_for(path)
            if html_after and r.name == "html":
                from roofline.render.html import render_html

                data: str | bytes = render_html(analysis, title, summary=summary, after=html_after)
            else:
                data = r.render(analysis, title=title, summary=summary, path=path)
            # a lone surrogate (a JSON "\ud800" escape in a name) cannot be UTF-8: written as its escape instead
            raw = data if isinstance(data, bytes) else data.encode("utf-8", "backslashreplace")
            out.append((label, str(path), raw))
    return out


def write_all(outputs: list[tuple[str, str, bytes]], *, report: bool = True) -> None:
    """Write every (label, path, bytes) all-or-nothing (:func:`roofline.core.fileio.write_files_atomic`), then say
    where each went."""
    from roofline.core.fileio import write_files_atomic
    from roofline.core.text import visible

    write_files_atomic([(path, data) for _, path, data in outputs])
    if report:
        for label, path, _ in outputs:
            print(f"{label}: {visible(path)}")


def write_outputs(analysis: Analysis, args: argparse.Namespace, *, title: str | None = None,
                  summary: Summary | None = None) -> None:
    """Every requested output file, each by the renderer its extension names (:mod:`roofline.render`):
    all rendered first, then all written (:func:`write_all`), so a failing renderer writes nothing."""
    write_all(render_outputs(analysis, args, title=title, summary=summary))
