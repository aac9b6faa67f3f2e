"""Names are data, all or nothing, numbers at the extremes (issue 13).

Hostile names (rich markup, mathtext, terminal escapes, spreadsheet formulas, HTML, 300 characters, 10 MB) reach
every renderer through every command that takes names from files: analyze, plot, report (a saved analysis),
compare, device (a device file), llm (a config's ``_name_or_path``) and the Python API.  Each case checks the
output is safe for its medium (:mod:`roofline.core.text`).  Partial-output cases make the last output fail and check
that nothing was written; extreme-number cases draw charts and tables at the edges of the accepted range.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hostile.harness import Case

MARKUP = "[/bold]x[red]"
MATH = "$\\undefinedcmd{x}$"
ESC = "\x1b[2J\x1b]0;title\x07"
FORMULA = '=HYPERLINK("http://x")'
SUM = "@SUM(A1)"
PLUS = "+cmd"
LINK = '<a href="https://evil">x</a>'
LONG = "n" * 300
HUGE = "h" * 10_000_000
AN = ("analyze", "w.json", "--device", "h100")

#: the HTML is safe: the name shown escaped in the tables, never as a live tag in the page or in plotly's JSON
HTML_SAFE = ("'&lt;a href' in (tmp / 'r.html').read_text() and '<a href=\"https://evil\"' not in "
             "(tmp / 'r.html').read_text() and '\\\\u003ca href' not in (tmp / 'r.html').read_text()")


def op(name: str = "a", **extra: Any) -> dict[str, Any]:
    o: dict[str, Any] = {"name": name, "kind": "elementwise", "flops": 1e6, "bytes_read": 4e6, "bytes_written": 4e6}
    o.update(extra)
    return o


def wl(ops: list[dict[str, Any]] | None = None, title: str = "w") -> str:
    return json.dumps({"schema": "roofline.workload/1", "title": title, "ops": ops or [op()]})


def named(name: str, **extra: Any) -> str:
    """A workload of two ops, the first called ``name`` (a matmul, so it is on the chart and in every table)."""
    return wl([op(name, kind="matmul", flops=2e9, bytes_read=4e6, bytes_written=4e6, **extra),
               op("b", flops=1e6, bytes_read=4e6, bytes_written=4e6)])


DEVICE: dict[str, Any] = {
    "schema": "roofline.device/1", "name": "toy", "kind": "cpu",
    "compute": [{"unit": "vector", "precision": "fp32", "flops": 1e12, "provenance": {"kind": "user", "source": "t"}}],
    "memory": [{"level": "DRAM", "bandwidth": 1e11, "capacity": 1e10},
               {"level": "L2", "bandwidth": 1e12, "capacity": 1e6}],
}


def dev(name: str = "toy", level: str = "DRAM", **changes: Any) -> str:
    d = copy.deepcopy(DEVICE)
    d["name"] = name
    d["memory"][0]["level"] = level
    d.update(changes)
    return json.dumps(d)


def config(name: str) -> str:
    """A tiny GPT-2 config.json with a hostile ``_name_or_path`` (2,048 positions: the default prompt of 1,024 fits)."""
    return json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_layer": 2,
                       "n_head": 4, "vocab_size": 128, "n_positions": 2048, "n_inner": 256, "_name_or_path": name})


#: a saved analysis (roofline.analysis/1) of a workload, written by the case's own code before `report` runs
def saved(name: str, title: str = "w") -> str:
    return ("import roofline\n"
            f"w = roofline.Workload.from_ops([roofline.Op({name!r}, kind='matmul', flops=2e9, bytes_read=4e6), "
            f"roofline.Op('b', flops=1e6, bytes_read=4e6)], title={title!r})\n"
            "roofline.analyze(w, roofline.get_device('h100')).save('.a.json')\n")


def report(name: str, *extra: str, title: str = "w") -> str:
    """Code for `roofline report a.json *extra` on a saved analysis of op ``name`` (the analysis is saved first,
    so these cases run as code: command "report", no argv)."""
    return saved(name, title) + ("from roofline import cli\n"
                                 f"raise SystemExit(cli.main(['report', '.a.json', *{extra!r}]))\n")


def api(body: str) -> str:
    return "import roofline\nfrom roofline import Op, Workload, analyze, get_device\n" + body


def exists(*paths: str) -> str:
    return " and ".join(f"(tmp / {p!r}).is_file() and (tmp / {p!r}).stat().st_size > 0" for p in paths)


def csv_cell(text: str) -> str:
    """The CSV has the cell ``text`` (csv module quoting undone)."""
    return f"any({text!r} in row for row in __import__('csv').reader(__import__('io').StringIO((tmp / 'r.csv').read_bytes().decode(), newline='')))"


CASES: list[Case] = []


def add(*cases: Case) -> None:
    CASES.extend(cases)


# ----------------------------------------------------------------------------- rich markup in the terminal
add(
    Case("names/markup-op-analyze", "names-markup", "analyze", AN, files={"w.json": named(MARKUP)}, expect="ok",
         check="'[/bold]x[red]' in out"),
    Case("names/markup-title-analyze", "names-markup", "analyze", AN, files={"w.json": wl(title=MARKUP)}, expect="ok",
         check="'[/bold]x[red] on NVIDIA' in out"),
    Case("names/markup-group-by-module", "names-markup", "analyze", (*AN, "--group-by", "module"),
         files={"w.json": wl([op("a", group=MARKUP)])}, expect="ok", check="'[/bold]x[red]' in out"),
    Case("names/markup-report", "names-markup", "report", code=report(MARKUP), expect="ok",
         check="'[/bold]x[red]' in out"),
    Case("names/markup-device-file-json", "names-markup", "device", ("device", "d.json", "--json"),
         files={"d.json": dev(MARKUP)}, expect="ok", check="__import__('json').loads(out)['name'] == '[/bold]x[red]'"),
    Case("names/markup-level-analyze", "names-markup", "analyze", ("analyze", "w.json", "--device", "d.json"),
         files={"w.json": named("a"), "d.json": dev(level=MARKUP)}, expect="ok", check="'[/bold]x[red]' in out"),
    Case("names/markup-llm-name", "names-markup", "llm", ("llm", "config.json", "--device", "h100"),
         files={"config.json": config(MARKUP)}, expect="ok", check="'[/bold]x[red]' in out"),
    Case("names/markup-plot-point", "names-markup", "plot",
         ("plot", "--device", "h100", "--point", f"{MARKUP}:1e9:1e6"), expect="ok", check="'[/bold]x[red]' in out"),
    Case("names/markup-api-terminal", "names-markup", "api",
         code=api("from roofline.render.terminal import render\n"
                  "a = analyze(Workload.from_ops([Op('[bold red]x[/]', flops=1e9, bytes_read=1e6)]),\n"
                  "            get_device('h100'))\n"
                  "print(render(a, color=False))\n"),
         expect="ok", check="'[bold red]x[/]' in out"),
    Case("names/markup-compare-title", "names-markup", "compare", ("compare", "w.json", "--devices", "h100,d.json"),
         files={"w.json": wl(title=MARKUP), "d.json": dev(MARKUP)}, expect="ok", check="'[/bold]x[red]' in out"),
)

# ----------------------------------------------------------------------------- mathtext on charts
add(
    Case("names/mathtext-op-png", "names-mathtext", "analyze", (*AN, "-o", "c.png"), files={"w.json": named(MATH)},
         expect="ok", check=exists("c.png")),
    Case("names/mathtext-title-svg", "names-mathtext", "analyze", (*AN, "-o", "c.svg"),
         files={"w.json": wl(title=MATH)}, expect="ok", check=exists("c.svg")),
    Case("names/mathtext-device-file-chart", "names-mathtext", "device", ("device", "d.json", "-o", "c.png"),
         files={"d.json": dev(MATH)}, expect="ok", check=exists("c.png")),
    Case("names/mathtext-level-pdf", "names-mathtext", "analyze",
         ("analyze", "w.json", "--device", "d.json", "-o", "c.pdf"),
         files={"w.json": named("a"), "d.json": dev(level=MATH)}, expect="ok", check=exists("c.pdf")),
    Case("names/mathtext-report-chart", "names-mathtext", "report", code=report(MATH, "-o", "c.png"), expect="ok",
         check=exists("c.png")),
    Case("names/mathtext-plot-point", "names-mathtext", "plot",
         ("plot", "--peak", "100GFLOP/s", "--bandwidth", "10GB/s", "--point", "$a$ $\\b{:1e9:1e8", "-o", "c.png"),
         expect="ok", check=exists("c.png")),
    Case("names/mathtext-compare-chart", "names-mathtext", "compare",
         ("compare", "w.json", "--devices", "h100,d.json", "-o", "c.png"),
         files={"w.json": named(MATH, precision="fp32"), "d.json": dev(MATH, level=MATH)}, expect="ok",
         check=exists("c.png")),
    Case("names/mathtext-llm-chart", "names-mathtext", "llm", ("llm", "config.json", "--device", "h100", "-o", "c.png"),
         files={"config.json": config(MATH)}, expect="ok", check=exists("c.png")),
    Case("names/mathtext-api-chart-bytes", "names-mathtext", "api",
         code=api("from roofline.render.chart import chart_bytes\n"
                  "d = roofline.Device.simple('$\\\\x$ dev', '100 GFLOP/s', '10 GB/s')\n"
                  "a = analyze(Workload.from_ops([Op('$\\\\sqrt{$', flops=1e9, bytes_read=1e6)], title='$$'), d)\n"
                  "print(len(chart_bytes(a, 'svg')) > 1000)\n"),
         expect="ok", check="'True' in out"),
)

# ----------------------------------------------------------------------------- control characters
SVG_OK = "__import__('xml.etree.ElementTree').etree.ElementTree.parse(str(tmp / 'c.svg')) is not None"
add(
    Case("names/escape-op-analyze", "control-chars", "analyze", AN, files={"w.json": named(ESC)}, expect="ok",
         check="'\\\\x1b[2J' in out"),
    Case("names/escape-title-analyze", "control-chars", "analyze", AN, files={"w.json": wl(title=ESC)}, expect="ok",
         check="'\\\\x07' in out"),
    Case("names/escape-device-file-json", "control-chars", "device", ("device", "d.json", "--json"),
         files={"d.json": dev(ESC)}, expect="ok", check="__import__('json').loads(out)['name'].startswith('\\x1b[2J')"),
    Case("names/escape-level-analyze", "control-chars", "analyze", ("analyze", "w.json", "--device", "d.json"),
         files={"w.json": named("a"), "d.json": dev(level=ESC)}, expect="ok", check="'\\\\x1b' in out"),
    Case("names/escape-report", "control-chars", "report", code=report(ESC, "--group-by", "name"), expect="ok"),
    Case("names/escape-plot-point-svg", "control-chars", "plot",
         ("plot", "--device", "h100", "--point", "\x1b[31mred\x9b:1e9:1e6", "-o", "c.svg"), expect="ok",
         check=SVG_OK),
    Case("names/escape-unknown-device-error", "control-chars", "analyze",
         ("analyze", "w.json", "--device", "nope\x1b[2J\x07"), files={"w.json": named("a")}, names="nope"),
    Case("names/escape-argparse-error", "control-chars", "analyze", (*AN, "--top", "\x1b[2J"),
         files={"w.json": named("a")}, names="--top"),
    Case("names/escape-llm-name", "control-chars", "llm", ("llm", "config.json", "--device", "h100"),
         files={"config.json": config(ESC)}, expect="ok"),
    Case("names/escape-bad-kind-error", "control-chars", "analyze", AN,
         files={"w.json": wl([op("a", kind="\x1b]0;pwned\x07")])}, names="kind"),
    Case("names/lone-surrogate-all-outputs", "control-chars", "analyze",
         (*AN, "--csv", "r.csv", "--html", "r.html", "--json", "a.json"), files={"w.json": named("a\ud800b")},
         expect="ok", check="'a\\\\ud800b' in out and " + exists("r.csv", "r.html", "a.json")),
    Case("names/escape-api-error", "control-chars", "api",
         code=api("from roofline.core.errors import RooflineError\n"
                  "raise RooflineError('bad name \\x1b[2J\\x9b here', where='f\\x07.json')\n"),
         names="bad name \\x1b[2J\\x9b here"),
)

# ----------------------------------------------------------------------------- CSV injection
CSV = (*AN, "--csv", "r.csv")
add(
    Case("names/csv-hyperlink", "csv-injection", "analyze", CSV, files={"w.json": named(FORMULA)}, expect="ok",
         check=csv_cell("'" + FORMULA)),
    Case("names/csv-at-sum", "csv-injection", "analyze", CSV, files={"w.json": named(SUM)}, expect="ok",
         check=csv_cell("'" + SUM)),
    Case("names/csv-plus", "csv-injection", "analyze", CSV, files={"w.json": named(PLUS)}, expect="ok",
         check=csv_cell("'" + PLUS)),
    Case("names/csv-minus-group", "csv-injection", "analyze", CSV,
         files={"w.json": wl([op("a", group="-2+3+cmd|' /C calc'!A0")])}, expect="ok",
         check=csv_cell("'-2+3+cmd|' /C calc'!A0")),
    Case("names/csv-tab-and-cr", "csv-injection", "analyze", CSV,
         files={"w.json": wl([op("\t=1+1"), op("\r=2+2", kind="norm")])}, expect="ok",
         check=csv_cell("'\t=1+1") + " and " + csv_cell("'\r=2+2")),
    Case("names/csv-report", "csv-injection", "report", code=report(FORMULA, "--csv", "r.csv"), expect="ok",
         check=csv_cell("'" + FORMULA)),
    Case("names/csv-plot-point", "csv-injection", "plot",
         ("plot", "--device", "h100", "--point", "=1+1:1e9:1e6", "--csv", "r.csv"), expect="ok",
         check=csv_cell("'=1+1")),
    Case("names/csv-numbers-stay-numbers", "csv-injection", "analyze", CSV, files={"w.json": named(SUM)},
         expect="ok", check="all(not r['flops'].startswith(\"'\") and float(r['flops']) >= 0 and "
                            "not r['share'].startswith(\"'\") for r in "
                            "__import__('csv').DictReader(__import__('io').StringIO((tmp / 'r.csv').read_bytes().decode(), newline='')))"),
    Case("names/csv-api-to-csv", "csv-injection", "api",
         code=api("from roofline.render.export import to_csv\n"
                  "a = analyze(Workload.from_ops([Op('@x', group='=A1', flops=1e9, bytes_read=1e6)]),\n"
                  "            get_device('h100'))\n"
                  "print(to_csv(a))\n"),
         expect="ok", check="\"'@x\" in out and \"'=A1\" in out and '\\n@x' not in out"),
    Case("names/csv-level-from-device-file", "csv-injection", "analyze",
         ("analyze", "w.json", "--device", "d.json", "--csv", "r.csv"),
         files={"w.json": named("a"), "d.json": dev(FORMULA, level="=cmd|'/C calc'!A0")}, expect="ok",
         check="not any(c.startswith(('=', '@', '+', '-')) for row in __import__('csv').reader(__import__('io').StringIO("
               "(tmp / 'r.csv').read_bytes().decode(), newline='')) for c in row[1:] if not c[:1].isdigit())"),
)

# ----------------------------------------------------------------------------- plotly (HTML) names
HTML = (*AN, "--html", "r.html")
add(
    Case("names/html-op", "plotly-names", "analyze", HTML, files={"w.json": named(LINK)}, expect="ok",
         check=HTML_SAFE),
    Case("names/html-level", "plotly-names", "analyze", ("analyze", "w.json", "--device", "d.json", "--html", "r.html"),
         files={"w.json": named("a"), "d.json": dev(level=LINK)}, expect="ok", check=HTML_SAFE),
    Case("names/html-device-name", "plotly-names", "analyze",
         ("analyze", "w.json", "--device", "d.json", "--html", "r.html"),
         files={"w.json": named("a"), "d.json": dev(LINK)}, expect="ok", check=HTML_SAFE),
    Case("names/html-title", "plotly-names", "analyze", HTML, files={"w.json": wl(title=LINK)}, expect="ok",
         check=HTML_SAFE),
    Case("names/html-report", "plotly-names", "report", code=report(LINK, "--html", "r.html"), expect="ok",
         check=HTML_SAFE),
    Case("names/html-compare", "plotly-names", "compare",
         ("compare", "w.json", "--devices", "h100,d.json", "--html", "r.html"),
         files={"w.json": named(LINK, precision="fp32"), "d.json": dev(LINK, level=LINK)}, expect="ok",
         check=HTML_SAFE),
    Case("names/html-plot-point", "plotly-names", "plot",
         ("plot", "--device", "h100", "--point", "<a href=\"https//evil\">x</a>:1e9:1e6", "--html", "r.html"),
         expect="ok", check="'&lt;a href' in (tmp / 'r.html').read_text() and '<a href=\"https//evil\"' not in "
                            "(tmp / 'r.html').read_text() and '\\\\u003ca href' not in (tmp / 'r.html').read_text()"),
    Case("names/html-module", "plotly-names", "analyze", HTML, files={"w.json": wl([op("a", group=LINK)])},
         expect="ok", check=HTML_SAFE),
    Case("names/html-llm-name", "plotly-names", "llm",
         ("llm", "config.json", "--device", "h100", "--html", "r.html"), files={"config.json": config(LINK)},
         expect="ok", check=HTML_SAFE),
    Case("names/html-api-trace-names", "plotly-names", "api",
         code=api("import json\nfrom roofline.render.html import compare_figure, figure\n"
                  "d = roofline.Device.simple('<b>dev</b>', '100 GFLOP/s', '10 GB/s')\n"
                  "a = analyze(Workload.from_ops([Op('<i>op</i>', flops=1e9, bytes_read=1e6)]), d)\n"
                  "texts = []\n"
                  "for fig in (figure(a), compare_figure([a], labels=['<img src=x>'], title='<b>t</b>')):\n"
                  "    for t in fig['data']:\n"
                  "        texts += [t.get('name', '')] + list(t.get('hovertext') or [])\n"
                  "    texts.append(json.dumps(fig['layout'].get('title', '')))\n"
                  "print(all('<b>dev' not in x and '<i>op' not in x and '<img' not in x and '<b>t' not in x "
                  "for x in texts), any('&lt;img' in x for x in texts))\n"),
         expect="ok", check="'True True' in out"),
)

# ----------------------------------------------------------------------------- long names
MARK = "...[+44 chars]"
HUGE_MARK = "...[+9999744 chars]"
add(
    # the op table cuts a long name to its column, marker included: '...[+N chars]' stays whole on one line
    Case("names/long-300-analyze", "long-names", "analyze", AN, files={"w.json": named(LONG)}, expect="ok",
         check="any(line.count('n') < 100 and '...[+' in line and ' chars]' in line for line in out.splitlines())"),
    Case("names/huge-op-analyze", "long-names", "analyze", AN, files={"w.json": named(HUGE)}, expect="ok",
         check="'chars]' in out and len(out) < 100000"),
    Case("names/huge-op-json-kept-whole", "long-names", "analyze", (*AN, "--json", "a.json"),
         files={"w.json": named(HUGE)}, expect="ok",
         check="any(len(names[0]) == 10_000_000 for names in "
               "[__import__('json').loads((tmp / 'a.json').read_text())['workload']['ops']['name']])"),
    Case("names/huge-op-html", "long-names", "analyze", HTML, files={"w.json": named(HUGE)}, expect="ok",
         check=f"{HUGE_MARK!r} in (tmp / 'r.html').read_text() and (tmp / 'r.html').stat().st_size < 9_000_000"),
    Case("names/huge-op-chart", "long-names", "analyze", (*AN, "-o", "c.png"), files={"w.json": named(HUGE)},
         expect="ok", check=exists("c.png")),
    Case("names/huge-title-analyze", "long-names", "analyze", (*AN, "-o", "c.svg"), files={"w.json": wl(title=HUGE)},
         expect="ok", check=f"{HUGE_MARK!r} in out and " + exists("c.svg")),
    Case("names/long-report", "long-names", "report", code=report(LONG, "--group-by", "name"), expect="ok",
         check=f"{MARK!r} in out"),
    Case("names/long-device-file", "long-names", "device", ("device", "d.json"), files={"d.json": dev(LONG)},
         expect="ok"),
    Case("names/huge-level-analyze", "long-names", "analyze", ("analyze", "w.json", "--device", "d.json"),
         files={"w.json": named("a"), "d.json": dev(level=HUGE)}, expect="ok", check=f"{HUGE_MARK!r} in out"),
    Case("names/huge-name-in-error", "long-names", "api",
         code=api("from roofline.core.errors import RooflineError\nraise RooflineError('bad ' + 'z' * 10_000_000)\n"),
         names="...[+", check="len(err) < 5000"),
    Case("names/huge-plot-point", "long-names", "plot",
         ("plot", "--device", "h100", "--point", "p" * 1_000_000 + ":1e9:1e6", "--csv", "r.csv"), expect="ok",
         check="'chars]' in out and len(out) < 100000"),
)

# ----------------------------------------------------------------------------- all or nothing
FOUR = ("c.png", "a.json", "r.csv", "r.html")
BOOM = api(
    "import argparse\nimport roofline.render as R\nfrom roofline.commands import _common\n"
    "from roofline.core.errors import RooflineError\n"
    "class Boom(R.{cls}):\n"
    "    def render(self, *a, **k):\n"
    "        raise RooflineError('boom: the {what} renderer failed')\n"
    "R.RENDERERS = tuple(Boom() if isinstance(r, R.{cls}) else r for r in R.RENDERERS)\n"
    "a = analyze(Workload.from_ops([Op('x', flops=1e9, bytes_read=1e6)]), get_device('h100'))\n"
    "_common.{fn}(a, argparse.Namespace(output='c.png', json='a.json', csv='r.csv', html='r.html'{extra}))\n")
OLD = {"c.png": b"old chart", "a.json": "old json", "r.csv": "old csv", "r.html": "old html"}
UNTOUCHED = " and ".join(f"(tmp / {p!r}).read_bytes() == {c.encode() if isinstance(c, str) else c!r}"
                         for p, c in OLD.items())
add(
    Case("outputs/last-output-parent-is-a-file", "partial-outputs", "analyze",
         (*AN, "-o", "c.png", "--json", "a.json", "--csv", "r.csv", "--html", "f/r.html"),
         files={"w.json": named("a"), "f": "a file"}, names="f/r.html", outputs=FOUR),
    Case("outputs/report-csv-parent-is-a-file", "partial-outputs", "report",
         code=saved("a") + "from roofline import cli\n"
         "raise SystemExit(cli.main(['report', '.a.json', '-o', 'c.png', '--html', 'r.html', '--csv', 'f/r.csv']))\n",
         files={"f": "a file"}, names="f/r.csv", outputs=("c.png", "r.html", "f/r.csv")),
    Case("outputs/plot-json-is-a-directory", "partial-outputs", "plot",
         ("plot", "--device", "h100", "--point", "a:1e9:1e6", "-o", "c.png", "--csv", "r.csv", "--json", "d"),
         files={"d/x": "x"}, names="d", outputs=("c.png", "r.csv")),
    Case("outputs/llm-html-parent-is-a-file", "partial-outputs", "llm",
         ("llm", "config.json", "--device", "h100", "-o", "c.png", "--json", "a.json", "--html", "f/r.html"),
         files={"config.json": config("m"), "f": "x"}, names="f/r.html", outputs=("c.png", "a.json")),
    Case("outputs/html-renderer-fails-nothing-written", "partial-outputs", "api",
         code=BOOM.format(cls="HtmlRenderer", what="HTML", fn="write_outputs", extra=""), names="boom",
         outputs=FOUR),
    Case("outputs/csv-renderer-fails-existing-untouched", "partial-outputs", "api",
         code=BOOM.format(cls="CsvRenderer", what="CSV", fn="write_outputs", extra=""), files=dict(OLD),
         names="boom", check=UNTOUCHED),
    Case("outputs/emit-html-fails-before-any-write", "partial-outputs", "api",
         code=BOOM.format(cls="HtmlRenderer", what="HTML", fn="emit", extra=", top=5, advice=False"),
         names="boom", outputs=FOUR, check="out == ''"),
    Case("outputs/write-all-second-target-bad", "partial-outputs", "api",
         code=api("from roofline.commands._common import write_all\n"
                  "write_all([('json', 'a.json', b'new'), ('csv', 'f/r.csv', b'new')])\n"),
         files={"a.json": "old json", "f": "x"}, names="f/r.csv",
         check="(tmp / 'a.json').read_text() == 'old json' and not list(tmp.glob('.a.json*'))"),
    Case("outputs/chart-renderer-fails-emit-existing-untouched", "partial-outputs", "api",
         code=BOOM.format(cls="ChartRenderer", what="chart", fn="emit", extra=", top=5, advice=True"),
         files=dict(OLD), names="boom", check=UNTOUCHED + " and out == ''"),
)

# ----------------------------------------------------------------------------- numbers at the extremes
ZERO = wl([op("z", flops=0, bytes_read=0, bytes_written=0), op("y", kind="norm", flops=0, bytes_read=0,
                                                                 bytes_written=0)])
ZERO_CHAIN = wl([op("a", flops=0, bytes_read=0, bytes_written=4e6), op("b", flops=0, bytes_read=4e6, bytes_written=0)])
ZERO_AMONG = wl([op("z", kind="matmul", flops=0, bytes_read=0, bytes_written=0),
                 op("m", kind="matmul", flops=2e12, bytes_read=1e9, bytes_written=1e6, weight_bytes=1e9)])
FAR = wl([op("far", kind="matmul", flops=1e30, bytes_read=1e-300), op("near", flops=1e-300, bytes_read=1e30)])
add(
    Case("extreme/plot-ridge-1e36", "extreme-numbers", "plot",
         ("plot", "--peak", "1e30FLOP/s", "--bandwidth", "1e-6B/s", "--point", "a:1e30:1e-300",
          "--point", "b:1e-300:1e30", "-o", "c.png", "--html", "r.html", "--csv", "r.csv"),
         expect="ok", check=exists("c.png", "r.html", "r.csv")),
    Case("extreme/plot-ridge-1e-36-svg", "extreme-numbers", "plot",
         ("plot", "--peak", "1e-6FLOP/s", "--bandwidth", "1e30B/s", "--point", "a:1e30:1e-300:1e-15",
          "--point", "b:1e-300:1e30:1e9", "-o", "c.svg", "--html", "r.html", "--advice"),
         expect="ok", check=exists("c.svg", "r.html")),
    Case("extreme/plot-peak-1e308", "extreme-numbers", "plot",
         ("plot", "--peak", "1e308FLOP/s", "--bandwidth", "1e-300B/s", "--point", "a:1:1", "-o", "c.png"),
         names="flops", outputs=("c.png",)),
    Case("extreme/all-zero-ops-advice", "extreme-numbers", "analyze", (*AN, "--advice", "--html", "r.html"),
         files={"w.json": ZERO}, expect="ok", check="'zero roofline time' in out"),
    Case("extreme/zero-time-chain-advice", "extreme-numbers", "analyze", (*AN, "--advice", "-o", "c.png"),
         files={"w.json": ZERO_CHAIN}, expect="ok", check="'advice:' in out and " + exists("c.png")),
    Case("extreme/zero-time-op-among-others", "extreme-numbers", "analyze", (*AN, "--advice", "--html", "r.html"),
         files={"w.json": ZERO_AMONG}, expect="ok", check="'1 op(s) with zero roofline time skipped' in out"),
    Case("extreme/far-ops-analyze-all-outputs", "extreme-numbers", "analyze",
         (*AN, "-o", "c.pdf", "--html", "r.html", "--csv", "r.csv", "--json", "a.json", "--advice"),
         files={"w.json": FAR}, expect="ok", check=exists("c.pdf", "r.html", "r.csv", "a.json")),
    Case("extreme/far-ops-report", "extreme-numbers", "api",
         code=api("w = Workload.from_ops([Op('far', kind='matmul', flops=1e30, bytes_read=1e-300), "
                  "Op('near', flops=1e-300, bytes_read=1e30)])\n"
                  "analyze(w, roofline.Device.simple('x', 1e30, 1e-6)).save('a.json')\n"
                  "from roofline import cli\n"
                  "raise SystemExit(cli.main(['report', 'a.json', '-o', 'c.png', '--html', 'r.html', '--advice']))\n"),
         expect="ok", check=exists("c.png", "r.html")),
    Case("extreme/device-file-extreme-roofs", "extreme-numbers", "device", ("device", "d.json", "-o", "c.png"),
         files={"d.json": dev(compute=[{"unit": "vector", "precision": "fp32", "flops": 1e30,
                                        "provenance": {"kind": "user", "source": "t"}}],
                              memory=[{"level": "DRAM", "bandwidth": 1e-6}, {"level": "L1", "bandwidth": 1e30}])},
         expect="ok", check=exists("c.png")),
    Case("extreme/compare-far-ops", "extreme-numbers", "compare",
         ("compare", "w.json", "--devices", "h100,d.json", "-o", "c.png", "--html", "r.html"),
         files={"w.json": FAR, "d.json": dev(compute=[{"unit": "vector", "precision": "fp32", "flops": 1e-6,
                                                         "provenance": {"kind": "user", "source": "t"}}])},
         expect="ok", check=exists("c.png", "r.html")),
    Case("extreme/api-chart-bytes-frame-clipped", "extreme-numbers", "api",
         code=api("from roofline.render.chart import decade, span, AXIS_MAX, AXIS_MIN\n"
                  "print(decade(1e308, True, 1) == AXIS_MAX, decade(1e-300, False, 1) == AXIS_MIN,\n"
                  "      span(AXIS_MAX, AXIS_MAX)[0] < AXIS_MAX)\n"),
         expect="ok", check="out.split() == ['True', 'True', 'True']"),
)
