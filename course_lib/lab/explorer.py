"""An attention explorer for the course's trained models (notebooks 03, 08 and 09).

Pick a query token and see, for every layer and head, where it looks; pick a key and see its score split into the
per-dimension products ``q_i k_i`` that sum to it; step through the stages of one head,

    QKᵀ  →  ÷√d_k  →  mask  →  softmax  →  ·V

on the model's own tensors; switch heads off and see the prediction and the loss change.

It works on every model of the course, since all of them attend with ``MultiHeadAttention`` (the classifiers of
03-06, the ``DecoderLM`` of 08, the ``AttentionOnlyLM`` of 09, the ``ModernDecoderLM`` of 10 with any positions and
grouped-query heads): it reads what each layer recorded in its last call (``MultiHeadAttention.recorded``: queries and
keys after any rotation, values, the mask it used and its weights) and recomputes nothing; the stages are
``attention_stages`` of those tensors. A head is switched off by the layer's own ``head_mask``. A padded input (03's sentences are left-padded) comes with the model's padding mask: the explorer passes it to the
model and shows only the real tokens.

Everything is drawn as HTML tables (fast, readable by a screen reader, operable by keyboard). The display also
carries a ``text/html`` version with the attention of every head and every query precomputed and a few lines of
inline script, so a page rendered without a kernel still lets the reader pick the query token; ``text`` is the
plain-text fallback.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from .._validate import CourseInputError
from ..attention import attention_stages
from ..multihead import MultiHeadAttention

STAGES = ("QKᵀ", "÷√d_k", "mask", "softmax", "·V")


# ---------------------------------------------------------------------------------------------------------------
# Reading a model's attention
# ---------------------------------------------------------------------------------------------------------------


def attention_layers(model: nn.Module) -> list[MultiHeadAttention]:
    """The model's ``MultiHeadAttention`` modules, in the order they run (layer 0 first)."""
    layers = [module for module in model.modules() if isinstance(module, MultiHeadAttention)]
    if not layers:
        raise CourseInputError(
            f"{type(model).__name__} has no course MultiHeadAttention layer, so there is no attention to explore"
        )
    return layers


@dataclass
class LayerTrace:
    """One layer's attention on one sequence, as the layer recorded it: ``queries`` (after any rotation), ``keys``,
    ``values`` ``(num_heads, seq, d_head)``, the ``mask`` it used ``(seq, seq)`` boolean or None (nothing blocked), and
    its own ``weights`` ``(num_heads, seq, seq)``."""

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    mask: torch.Tensor | None
    weights: torch.Tensor


@dataclass
class Example:
    """One input of the explorer: ``tokens`` ``(1, seq)``, ``labels`` (one per real token), the model's padding
    ``mask`` (as passed to ``model(tokens, mask)``, True at real tokens; None: no padding) and, for a classifier,
    the ``target`` class."""

    tokens: torch.Tensor
    labels: list[str]
    mask: torch.Tensor | None = None
    target: int | None = None

    def __post_init__(self):
        tokens = torch.as_tensor(self.tokens)
        tokens = tokens[None] if tokens.dim() == 1 else tokens
        if tokens.dim() != 2 or tokens.shape[0] != 1:
            raise CourseInputError(f"tokens must be one sequence, (1, seq) or (seq,), got shape {tuple(tokens.shape)}")
        self.tokens, self.labels = tokens, [str(label) for label in self.labels]
        if len(self.labels) != len(self.positions):
            raise CourseInputError(
                f"give one label per real token: {len(self.positions)} tokens but {len(self.labels)} labels"
            )

    @property
    def positions(self) -> torch.Tensor:
        """The positions of the real tokens in ``tokens`` (all of them without a mask): ``(n_real,)``."""
        seq = self.tokens.shape[1]
        if self.mask is None:
            return torch.arange(seq)
        keep = torch.as_tensor(self.mask).reshape(-1).bool()
        if keep.numel() != seq:
            raise CourseInputError(f"the padding mask must hold one entry per token ({seq}), got {keep.numel()}")
        return keep.nonzero().flatten()

    def run(self, model: nn.Module):
        """``model(tokens)``, with the padding mask when there is one."""
        return model(self.tokens) if self.mask is None else model(self.tokens, self.mask)


def trace(model: nn.Module, tokens: torch.Tensor | Example) -> tuple[list[LayerTrace], object]:
    """Run the model on one sequence (``tokens`` ``(1, seq)``, or an ``Example`` with its padding mask) and read
    what every attention layer recorded, among the real tokens.

    Returns ``(layers, output)``: a ``LayerTrace`` per attention layer (``seq`` = the number of real tokens) and
    the model's output.
    """
    example = tokens if isinstance(tokens, Example) else Example(tokens, [""] * torch.as_tensor(tokens).shape[-1])
    attention = attention_layers(model)
    for layer in attention:
        layer.recorded = None
    with torch.no_grad():
        output = example.run(model)
    real = example.positions  # padding keys get weight 0 in the model, so the real rows still sum to 1
    layers = []
    for index, layer in enumerate(attention):
        if layer.recorded is None:
            raise CourseInputError(f"attention layer {index} of {type(model).__name__} did not run on this input")
        recorded = layer.recorded
        queries, keys, values = (t[0][:, real] for t in recorded[:3])  # (num_heads, n_real, d_head)
        weights = recorded.weights[0][:, real][:, :, real]  # (num_heads, n_real, n_real)
        mask = None
        if recorded.mask is not None:  # shared by the heads: batch item 0, head 0
            mask = recorded.mask.expand(recorded.weights.shape)[0, 0][real][:, real]  # (n_real, n_real)
            mask = None if bool(mask.all()) else mask
        layers.append(LayerTrace(queries, keys, values, mask, weights))
    return layers, output


def score_terms(queries: torch.Tensor, keys: torch.Tensor, query: int, key: int) -> torch.Tensor:
    """The products ``q_i k_i`` of one head's query ``query`` and key ``key``: ``(d_k,)``; they sum to ``(QKᵀ)[query, key]``.

    queries, keys: ``(seq, d_k)`` of one head.
    """
    return queries[query] * keys[key]


@contextmanager
def heads_off(model: nn.Module, heads: Iterable[tuple[int, int]]):
    """Inside the ``with`` block, the ``(layer, head)`` pairs write nothing: the layers' ``head_mask`` holds 0 for them
    (as ``AttentionOnlyLM(ablate=...)`` does); each layer's mask is put back afterwards."""
    layers = attention_layers(model)
    off: dict[int, torch.Tensor] = {}
    for layer, head in heads:
        if not (0 <= layer < len(layers) and 0 <= head < layers[layer].num_heads):
            raise CourseInputError(f"no head ({layer}, {head}) in this model")
        weight = layers[layer].w_o.weight
        off.setdefault(layer, torch.ones(layers[layer].num_heads, dtype=weight.dtype, device=weight.device))[head] = 0
    before = [layer.head_mask for layer in layers]
    for layer, head_mask in off.items():
        layers[layer].head_mask = head_mask if before[layer] is None else before[layer] * head_mask
    try:
        yield model
    finally:
        for layer, head_mask in zip(layers, before):
            layer.head_mask = head_mask


def logits_of(output) -> torch.Tensor:
    """The logits of a model's output (09's model returns ``(logits, weights)``)."""
    return output[0] if isinstance(output, tuple) else output


Readout = Callable[[object, int, Example], tuple[str, float | None]]


def next_token_readout(vocabulary: Sequence[str] | None = None) -> Readout:
    """For language models: at query ``t``, the predicted next token (its word in ``vocabulary``) and the loss of
    the true next token (None at the last token)."""

    def readout(output, query: int, example: Example) -> tuple[str, float | None]:
        positions = example.positions
        logits = logits_of(output)[0, positions[query]]  # (vocab,)
        guess = int(logits.argmax())
        if query + 1 >= len(positions):
            loss = None
        else:
            loss = float(-logits.log_softmax(-1)[example.tokens[0, positions[query + 1]]])
        return (vocabulary[guess] if vocabulary is not None else str(guess)), loss

    return readout


def class_readout(class_names: Sequence[str]) -> Readout:
    """For classifiers: the predicted class and the loss of the example's ``target`` class (the same at every query;
    None without a target)."""

    def readout(output, query: int, example: Example) -> tuple[str, float | None]:
        logits = logits_of(output)[0]  # (num_classes,)
        loss = None if example.target is None else float(-logits.log_softmax(-1)[int(example.target)])
        return class_names[int(logits.argmax())], loss

    return readout


# ---------------------------------------------------------------------------------------------------------------
# HTML pieces (shared by the live widget and the static page)
# ---------------------------------------------------------------------------------------------------------------


def _shade(weight: float) -> str:
    """A blue background whose strength is the weight, with text that stays readable on it."""
    weight = min(max(weight, 0.0), 1.0)
    colour = "white" if weight > 0.55 else "black"
    return f"background:rgba(31,119,180,{weight:.2f});color:{colour}"


def _row_html(labels: Sequence[str], row: Sequence[float], caption: str, focus: int | None = None) -> str:
    cells = "".join(
        f'<td style="{_shade(w)};padding:1px 3px;text-align:center;'
        f'{"outline:2px solid #d62728;" if k == focus else ""}" title="{html.escape(labels[k])}: {w:.2f}">'
        f"{html.escape(labels[k])}<br>{w:.2f}</td>"
        for k, w in enumerate(row)
    )
    return (
        f'<table style="border-collapse:collapse;font:11px monospace" aria-label="{html.escape(caption)}">'
        f'<caption style="text-align:left;font:12px sans-serif">{html.escape(caption)}</caption><tr>{cells}</tr></table>'
    )


def describe_row(labels: Sequence[str], row: Sequence[float], query: int, layer: int, head: int) -> str:
    """One sentence from the data, used as alt text and in the text fallback."""
    best = max(range(len(row)), key=lambda k: row[k])
    return (
        f"layer {layer} head {head}: from {labels[query]!r} (position {query}) the most attention, "
        f"{row[best]:.2f}, goes to {labels[best]!r} (position {best})"
    )


_GRID_LAYER = "display:flex;flex-wrap:wrap;gap:4px 12px;max-width:100%"  # the heads wrap on a narrow screen
_GRID_HEAD = "overflow-x:auto;max-width:100%;padding:2px 0"  # a long row scrolls inside its box, not the page


def grid_html(labels: Sequence[str], weights: Sequence[torch.Tensor], query: int) -> str:
    """The layer × head grid: for each head, the attention row of ``query`` over the keys (one line of heads per
    layer)."""
    rows = []
    for layer, layer_weights in enumerate(weights):
        heads = "".join(
            f'<div style="{_GRID_HEAD}">'
            f"{_row_html(labels, layer_weights[head, query].tolist(), describe_row(labels, layer_weights[head, query].tolist(), query, layer, head))}</div>"
            for head in range(layer_weights.shape[0])
        )
        rows.append(f'<div style="{_GRID_LAYER}">{heads}</div>')
    return f'<div class="attx-layers">{"".join(rows)}</div>'


# ---------------------------------------------------------------------------------------------------------------
# The explorer
# ---------------------------------------------------------------------------------------------------------------


class AttentionExplorer:
    """Explore the attention of ``model`` on one sequence, or on several (``more_inputs``).

    tokens: ``(1, seq)`` ids (or ``(seq,)``); labels: one string per real token; mask: the model's padding mask for
    ``tokens`` (True at real tokens; the padding is hidden); target: the true class, for a classifier's loss.
    readout(output, query, example) returns the prediction and the loss at ``query`` (default: the next token, for
    language models; ``class_readout`` for classifiers). The mask of each layer is the one the model used.
    more_inputs: more ``(tokens, labels[, mask[, target]])`` to choose from; the page without a kernel stores the
    first ``static_frames`` inputs. start_query: where each input's query starts (negative: counted from the end).

    ``display(explorer)`` shows the widget (with a static HTML version for pages without a kernel); ``text`` is the
    plain-text description of the current view; ``select(...)`` changes the view from Python.
    """

    def __init__(
        self,
        model: nn.Module,
        tokens: torch.Tensor,
        labels: Sequence[str],
        readout: Readout | None = None,
        more_inputs: Sequence[tuple] = (),
        title: str = "Attention explorer",
        mask: torch.Tensor | None = None,
        target: int | None = None,
        static_frames: int = 6,
        start_query: int = -1,
    ):
        self.model, self.title = model.eval(), title
        self.inputs = [Example(tokens, list(labels), mask, target)] + [Example(*item) for item in more_inputs]
        self.readout = readout or next_token_readout()
        self.static_frames, self.start_query = static_frames, start_query
        self.input = 0
        self.layer, self.head, self.stage = 0, 0, len(STAGES) - 1
        self.ablated: set[tuple[int, int]] = set()
        self._outputs: dict[tuple[int, frozenset], object] = {}
        self._widget = None
        self._load(0)

    def _load(self, index: int) -> None:
        """Trace input ``index`` and point the query and the key at its ``start_query`` token."""
        self.input = index
        self.example = self.inputs[index]
        self.layers, self.output = trace(self.model, self.example)
        self.num_heads = self.layers[0].weights.shape[0]
        self.query = self.key = self.start_query % len(self.labels)

    @property
    def tokens(self) -> torch.Tensor:
        return self.example.tokens

    @property
    def labels(self) -> list[str]:
        return self.example.labels

    # --- state -------------------------------------------------------------------------------------------------
    def select(
        self, query=None, key=None, layer=None, head=None, stage=None, ablated=None, input=None
    ) -> AttentionExplorer:
        """Change the view (any subset): input (index), positions among the real tokens, layer, head, stage (index
        or name), ablated ``(layer, head)`` pairs. A new input starts at ``start_query``."""
        if input is not None and int(input) % len(self.inputs) != self.input:
            self._load(int(input) % len(self.inputs))
            query = key = None
        seq = len(self.labels)
        if query is not None:
            self.query = int(query) % seq
        if key is not None:
            self.key = int(key) % seq
        if layer is not None:
            self.layer = int(layer) % len(self.layers)
        if head is not None:
            self.head = int(head) % self.num_heads
        if stage is not None:
            self.stage = STAGES.index(stage) if isinstance(stage, str) else int(stage) % len(STAGES)
        if ablated is not None:
            self.ablated = {(int(a), int(b)) for a, b in ablated}
        if self._widget is not None:
            self._refresh()
        return self

    def stages(self) -> dict[str, torch.Tensor]:
        """The five stages for the selected layer and head, ``(seq, seq)`` each (``·V``: ``(seq, d_head)``)."""
        t = self.layers[self.layer]
        return dict(zip(STAGES, attention_stages(t.queries[self.head], t.keys[self.head], t.values[self.head], t.mask)))

    def terms(self) -> torch.Tensor:
        """The per-dimension products of the selected (query, key) pair in the selected head: ``(d_head,)``."""
        t = self.layers[self.layer]
        return score_terms(t.queries[self.head], t.keys[self.head], self.query, self.key)

    def effect(self) -> dict:
        """Prediction and loss at the selected query with every head on, and with the ablated heads off."""
        before = self.readout(self.output, self.query, self.example)
        key = (self.input, frozenset(self.ablated))
        if key not in self._outputs:  # one forward pass per input and set of heads switched off
            with heads_off(self.model, self.ablated), torch.no_grad():
                self._outputs[key] = self.example.run(self.model)
        return {"before": before, "after": self.readout(self._outputs[key], self.query, self.example)}

    # --- views ---------------------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """A plain-text description of the current view (the fallback where nothing else renders)."""
        lines = [f"{self.title}: query {self.labels[self.query]!r} at position {self.query}"]
        for layer, t in enumerate(self.layers):
            for head in range(self.num_heads):
                lines.append(
                    "  " + describe_row(self.labels, t.weights[head, self.query].tolist(), self.query, layer, head)
                )
        terms = self.terms()
        lines.append(
            f"  score of query {self.query} and key {self.key} in layer {self.layer} head {self.head}: "
            f"{' + '.join(f'{x:.2f}' for x in terms.tolist())} = {float(terms.sum()):.3f}"
        )
        effect = self.effect()
        (guess, loss), (guess_off, loss_off) = effect["before"], effect["after"]
        off = ", ".join(f"L{a}H{b}" for a, b in sorted(self.ablated)) or "none"
        lines.append(
            f"  prediction {guess!r} (loss {_fmt(loss)}); with heads off ({off}): {guess_off!r} (loss {_fmt(loss_off)})"
        )
        return "\n".join(lines)

    def _detail_html(self) -> str:
        stages = self.stages()
        name = STAGES[self.stage]
        row = stages[name][self.query].tolist()
        if name == "·V":
            stage = "output vector of the head: " + ", ".join(f"{x:.3f}" for x in row)
        else:
            stage = " ".join(
                f"<span>{html.escape(self.labels[k])}:&nbsp;{_fmt(x, 3)}</span>" for k, x in enumerate(row)
            )
        terms = self.terms()
        products = " + ".join(f"{x:.2f}" for x in terms.tolist())
        effect = self.effect()
        (guess, loss), (guess_off, loss_off) = effect["before"], effect["after"]
        off = ", ".join(f"layer {a} head {b}" for a, b in sorted(self.ablated)) or "no head"
        return (
            f'<p class="attx-stage"><b>Stage {self.stage + 1} of {len(STAGES)}, {html.escape(name)}</b> (layer '
            f"{self.layer}, head {self.head}, query {html.escape(self.labels[self.query])!s} at {self.query}): {stage}</p>"
            f'<p class="attx-terms"><b>Score of query {self.query} and key {self.key}</b> = Σ q<sub>i</sub>k<sub>i</sub> '
            f"= {products} = {float(terms.sum()):.3f} (÷√d_k = {float(terms.sum()) / math.sqrt(terms.numel()):.3f})</p>"
            f'<p class="attx-effect" aria-live="polite"><b>Prediction</b> {html.escape(guess)!s} (loss {_fmt(loss)}); '
            f"with {off} switched off: {html.escape(guess_off)!s} (loss {_fmt(loss_off)})</p>"
        )

    def html(self) -> str:
        """The current view as HTML (the grid, the stage, the score's terms and the ablation)."""
        return (
            f'<div class="attx-view"><b>{html.escape(self.title)}</b> — query {html.escape(self.labels[self.query])} '
            f"(position {self.query}){grid_html(self.labels, [t.weights for t in self.layers], self.query)}"
            f"{self._detail_html()}</div>"
        )

    # --- the live widget -----------------------------------------------------------------------------------------
    def widget(self):
        """The ipywidgets view: token strip (buttons: Tab to one, Enter or Space to choose), layer, head, key, stage
        and ablation controls, an input chooser when there are several inputs, and the HTML view."""
        if self._widget is not None:
            return self._widget
        import ipywidgets as widgets

        self._strip = widgets.ToggleButtons(description="query", style={"button_width": "auto"})
        self._key = widgets.Dropdown(description="key")
        self._set_token_options()
        self._input = widgets.Dropdown(
            options=[(f"{n + 1}: {' '.join(e.labels)}"[:70], n) for n, e in enumerate(self.inputs)],
            value=self.input,
            description="input",
            layout={"width": "36em", "display": None if len(self.inputs) > 1 else "none"},
        )
        self._layer = widgets.Dropdown(options=list(range(len(self.layers))), value=self.layer, description="layer")
        self._head = widgets.Dropdown(options=list(range(self.num_heads)), value=self.head, description="head")
        self._stage = widgets.ToggleButtons(
            options=[(name, i) for i, name in enumerate(STAGES)],
            value=self.stage,
            description="stage",
            tooltips=[f"stage {i + 1} of {len(STAGES)}: {name}" for i, name in enumerate(STAGES)],
            style={"button_width": "auto"},
        )
        self._switches = [
            widgets.Checkbox(value=False, description=f"switch off L{layer}H{head}", indent=False)
            for layer in range(len(self.layers))
            for head in range(self.num_heads)
        ]
        self._view = widgets.HTML()
        self._widget = widgets.VBox(
            [
                self._input,
                self._strip,
                widgets.HBox([self._layer, self._head, self._key]),
                self._stage,
                widgets.HBox(self._switches),
                self._view,
            ]
        )
        self._widget.add_class("attention-explorer-live")
        for control in (self._input, self._strip, self._key, self._layer, self._head, self._stage, *self._switches):
            control.observe(self._on_change, names="value")
        self._refresh()
        return self._widget

    def _set_token_options(self) -> None:
        options = [(f"{label}·{i}", i) for i, label in enumerate(self.labels)]
        self._updating = True
        try:
            self._strip.options, self._strip.value = options, self.query
            self._strip.tooltips = [f"query: {label} at position {i}" for i, label in enumerate(self.labels)]
            self._key.options, self._key.value = options, self.key
        finally:
            self._updating = False

    def _on_change(self, change) -> None:
        if getattr(self, "_updating", False):
            return
        if change["owner"] is self._input:
            self.select(input=change["new"])
            return
        ablated = {(i // self.num_heads, i % self.num_heads) for i, box in enumerate(self._switches) if box.value}
        self.select(self._strip.value, self._key.value, self._layer.value, self._head.value, self._stage.value, ablated)

    def _refresh(self) -> None:
        if self._widget is None:
            return
        if len(self._strip.options) != len(self.labels) or self._input.value != self.input:
            self._updating = True
            try:
                self._input.value = self.input
            finally:
                self._updating = False
            self._set_token_options()
        self._updating = True
        try:
            for control, value in (
                (self._strip, self.query),
                (self._key, self.key),
                (self._layer, self.layer),
                (self._head, self.head),
                (self._stage, self.stage),
            ):
                if control.value != value:
                    control.value = value
        finally:
            self._updating = False
        self._view.value = self.html()

    def static_html(self) -> str:
        """A self-contained page fragment: every head's attention for every query of the first ``static_frames``
        inputs, with a few lines of inline script to choose the input and the query (buttons, Tab, arrow keys).
        No network."""
        frames = []
        for example in self.inputs[: self.static_frames]:
            layers, _ = trace(self.model, example)
            frames.append(
                {
                    "labels": list(example.labels),
                    "weights": [
                        [
                            [[round(w, 2) for w in row] for row in t.weights[h].tolist()]
                            for h in range(t.weights.shape[0])
                        ]
                        for t in layers
                    ],
                }
            )
        data = json.dumps(frames, ensure_ascii=True).replace("</", "<\\/")
        uid = "attx" + hashlib.sha1(data.encode()).hexdigest()[:10]  # the same on every run: quiet git diffs
        first = self.inputs[0]
        layers, _ = trace(self.model, first)
        first_view = grid_html(first.labels, [t.weights for t in layers], self.start_query % len(first.labels))
        return (
            _STATIC_TEMPLATE.replace("__START__", str(self.start_query))
            .replace("__UID__", uid)
            .replace("__DATA__", data)
            .replace("__TITLE__", html.escape(self.title))
            .replace("__FIRST__", first_view)
            .replace("__GRID_LAYER__", _GRID_LAYER)
            .replace("__GRID_HEAD__", _GRID_HEAD)
            .replace("__ONE_INPUT__", " hidden" if len(frames) == 1 else "")
        )

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle or {})
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = self.text
        return bundle


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if value == float("-inf"):
        return "−∞"
    return f"{value:.{digits}f}"


_STATIC_TEMPLATE = """<div id="__UID__" class="attention-explorer" role="group" aria-label="__TITLE__" style="max-width:100%">
<p><b>__TITLE__</b> (stored views: choose an input and a query token; Tab to a button, Enter to choose, arrow keys
to move)</p>
<div class="attx-inputs" role="toolbar" aria-label="inputs"__ONE_INPUT__></div>
<div class="attx-strip" role="toolbar" aria-label="query token"></div>
<p class="attx-status" aria-live="polite"></p>
<div class="attx-grid">__FIRST__</div>
<script>
(function () {
  var root = document.getElementById("__UID__"), frames = __DATA__, start = __START__, input = 0;
  function first(f) { return ((start % f.labels.length) + f.labels.length) % f.labels.length; }
  var query = first(frames[0]);
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); }
  function shade(w) { return "background:rgba(31,119,180," + w.toFixed(2) + ");color:" + (w > 0.55 ? "white" : "black"); }
  function describe(labels, row, l, h) {
    var best = 0; for (var k = 1; k < row.length; k++) if (row[k] > row[best]) best = k;
    return "layer " + l + " head " + h + ": from '" + labels[query] + "' (position " + query + ") the most attention, " +
      row[best].toFixed(2) + ", goes to '" + labels[best] + "' (position " + best + ")";
  }
  function render() {
    var f = frames[input], out = "<div class='attx-layers'>";
    for (var l = 0; l < f.weights.length; l++) {
      out += "<div style='__GRID_LAYER__'>";
      for (var h = 0; h < f.weights[l].length; h++) {
        var row = f.weights[l][h][query], cap = describe(f.labels, row, l, h);
        out += "<div style='__GRID_HEAD__'><table style='border-collapse:collapse;font:11px monospace' aria-label=\\"" +
          esc(cap) + "\\"><caption style='text-align:left;font:12px sans-serif'>" + esc(cap) + "</caption><tr>";
        for (var k = 0; k < row.length; k++) out += "<td style='" + shade(row[k]) + ";padding:1px 3px;text-align:center'>" +
          esc(f.labels[k]) + "<br>" + row[k].toFixed(2) + "</td>";
        out += "</tr></table></div>";
      }
      out += "</div>";
    }
    root.querySelector(".attx-grid").innerHTML = out + "</div>";
    root.querySelector(".attx-status").textContent = "input " + (input + 1) + ", query '" + f.labels[query] + "' at position " + query;
    var buttons = root.querySelectorAll(".attx-strip button");
    function press(b, on) { b.setAttribute("aria-pressed", on ? "true" : "false"); b.style.fontWeight = on ? "bold" : "";
      b.style.background = on ? "#BBE1F6" : ""; }
    for (var i = 0; i < buttons.length; i++) press(buttons[i], i === query);
    var inputs = root.querySelectorAll(".attx-inputs button");
    for (var n = 0; n < inputs.length; n++) press(inputs[n], n === input);
  }
  function strip() {
    var f = frames[input], bar = root.querySelector(".attx-strip"); bar.innerHTML = "";
    f.labels.forEach(function (label, i) {
      var b = document.createElement("button"); b.type = "button"; b.textContent = label; b.title = "position " + i;
      b.setAttribute("aria-label", "query " + label + " at position " + i);
      b.addEventListener("click", function () { query = i; render(); });
      b.addEventListener("keydown", function (e) {
        var step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
        if (!step) return;
        e.preventDefault(); query = (i + step + f.labels.length) % f.labels.length; render();
        bar.children[query].focus();
      });
      bar.appendChild(b);
    });
  }
  var chooser = root.querySelector(".attx-inputs");
  frames.forEach(function (f, n) {
    var b = document.createElement("button"); b.type = "button"; b.textContent = "input " + (n + 1);
    b.title = f.labels.join(" "); b.setAttribute("aria-label", "input " + (n + 1) + ": " + f.labels.join(" "));
    b.addEventListener("click", function () { input = n; query = first(f); strip(); render(); });
    chooser.appendChild(b);
  });
  strip(); render();
})();
</script>
<noscript>The first stored view is shown above; the notebook's text output describes it in words.</noscript>
</div>"""
