"""The interactive video search of notebook 02: type a query, move the temperature, watch the playlist change.

(At the end of the file: the sampling lab of notebook 08, ``SamplingWidget``.)

The search is attention with a single query over the tiny database in ``course_lib.lab.tasks.video_search``:

    scores  = K q                       one score per video: how many query concepts its title and tags mention
    weights = softmax(scores / T)       T is the temperature
    output  = weightsᵀ V                the blend of the videos' contents

``search(query, temperature)`` computes it; ``VideoSearchWidget`` draws it and redraws whenever the query, the
example drop-down or the temperature slider changes. The widget needs a running Jupyter kernel; without one (for
example on GitHub) only a one-line text stands in its place.
"""

from __future__ import annotations

import base64
import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from .._validate import CourseInputError
from ..attention import softmax
from ..decoder import generate
from ..sampling import sampler, top_k_filter, top_p_filter
from .plots import PALETTE, describe_figure, next_token_bars
from .tasks import video_search as vs


def figure_outputs(figure, text: str) -> tuple[dict, dict]:
    """The Output-widget content for ``figure`` (a PNG with alt text written from its data) and ``text`` under it.

    The widgets render to a PNG themselves and set the Output widget's content directly: printing inside
    ``with self.output:`` also works in JupyterLab, but makes nbclient echo every captured figure back to the kernel,
    and with ipykernel 7 that sometimes stalls the execution of the next cell when a notebook runs headless.
    """
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=80)
    alt = describe_figure(figure)
    image = {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(png.getvalue()).decode("ascii"), "text/plain": f"[figure] {alt}"},
        "metadata": {"image/png": {"alt": alt}},
    }
    return image, {"output_type": "stream", "name": "stdout", "text": text + "\n"}


class TextFallback:
    """A widget whose text fallback (what a page without a kernel shows in its place) is its whole ``repr``.

    ipywidgets cuts the fallback at 110 characters, so a notebook would have to print the numbers again, and in
    JupyterLab that printed copy sits under the live widget. With the whole text in the fallback, a page without a
    kernel (GitHub, the course website) shows the numbers and JupyterLab shows only the widget.
    """

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle["text/plain"] = repr(self)
        return bundle


def search(query: str, temperature: float = 1.0) -> dict:
    """Soft search of the video database for ``query``.

    Returns a dict of tensors: ``scores`` and ``weights`` ``(num_videos,)``, ``hard`` (the one-hot argmax, what a
    hard lookup returns), ``output`` ``(d_v,)`` (the weighted average of the value vectors), and the lists
    ``concepts`` (what the query mentions) and ``unknown`` (words the search cannot see).
    """
    if not temperature > 0:
        raise CourseInputError(f"temperature must be positive, got {temperature}")
    query_vector = vs.encode_query(query)  # (d_k,)
    keys, values = vs.key_vectors(), vs.value_vectors()  # (num_videos, d_k), (num_videos, d_v)
    scores = keys @ query_vector  # (num_videos,)
    weights = softmax(scores / temperature)  # (num_videos,)
    hard = torch.zeros_like(scores)
    hard[scores.argmax()] = 1.0
    return {
        "scores": scores,
        "weights": weights,
        "hard": hard,
        "output": weights @ values,  # (d_v,)
        "concepts": vs.concepts_in(query),
        "unknown": vs.unknown_words(query),
    }


def plot_search(result: dict, query: str, temperature: float, axes=None):
    """Two panels: the weight of every video (playlist order, the hard lookup's pick in orange) and the blend."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [2.2, 1]})
    ax_weights, ax_output = axes
    weights = result["weights"]
    order = torch.sort(weights, descending=True, stable=True).indices.tolist()
    hard_pick = int(result["hard"].argmax())
    colours = [PALETTE["orange"] if i == hard_pick else PALETTE["blue"] for i in order]
    bars = ax_weights.barh(range(len(order)), [weights[i].item() for i in order], color=colours)
    bars[order.index(hard_pick)].set_hatch("//")  # not by colour alone
    ax_weights.set_yticks(range(len(order)), [vs.TITLES[i] for i in order], fontsize=8)
    ax_weights.invert_yaxis()  # rank 1 at the top
    ax_weights.set_xlim(0, 1)
    ax_weights.axvline(1 / len(order), color="grey", linestyle="--", linewidth=1, label=f"uniform (1/{len(order)})")
    ax_weights.set_xlabel("attention weight (orange, hatched: the hard lookup's only pick)")
    ax_weights.set_title(f'"{query}", temperature {temperature:.2g}: the playlist', fontsize=10)
    ax_weights.legend(loc="lower right", fontsize=8)
    ax_output.bar(range(len(vs.CONTENT)), result["output"].tolist(), color=PALETTE["green"])
    ax_output.set_xticks(range(len(vs.CONTENT)), vs.CONTENT, rotation=45, ha="right")
    ax_output.set_ylim(0, 1)
    ax_output.set_ylabel("share of the blended output")
    ax_output.set_title("What the output blends", fontsize=10)
    ax_weights.figure.tight_layout()
    return axes


def describe(result: dict, top: int = 5) -> str:
    """The playlist as text, with a note on words the search could not see."""
    lines = []
    if result["unknown"]:
        lines.append(f"words the search does not know (ignored): {', '.join(result['unknown'])}")
    if not result["concepts"]:
        lines.append("the query mentions no known concept: every video scores 0, so the weights are uniform")
    lines.append(vs.playlist(result["weights"], result["scores"], top=top))
    hard_pick = int(result["hard"].argmax())
    tied = int((result["scores"] == result["scores"].max()).sum())
    tie_note = f"  (a {tied}-way tie for the best score: argmax simply takes the first)" if tied > 1 else ""
    lines.append(f"hard lookup (argmax) returns only: {vs.TITLES[hard_pick]}{tie_note}")
    return "\n".join(lines)


_PICK = "(pick an example)"


class VideoSearchWidget(TextFallback, widgets.VBox):
    """A query box, a drop-down of example queries and a temperature slider above a live chart and playlist.

    ``update()`` recomputes and redraws; it runs on every change of the controls (the text box reacts to Enter,
    the slider when released). After each update ``result`` holds the latest ``search`` output, ``text`` the
    playlist as text, and ``output.outputs`` what the widget shows (the chart as a PNG, then the text), so the
    update can be tested without a browser: set ``query_box.value`` or ``temperature.value`` and read them.
    """

    def __init__(self, query: str = "cats jumping", temperature: float = 1.0):
        self.query_box = widgets.Text(
            value=query,
            placeholder="type a search, press Enter",
            description="query",
            continuous_update=False,
            layout=widgets.Layout(width="320px"),
        )
        self.examples = widgets.Dropdown(
            options=[_PICK] + list(vs.EXAMPLE_QUERIES),
            value=query if query in vs.EXAMPLE_QUERIES else _PICK,
            description="examples",
        )
        self.temperature = widgets.FloatLogSlider(
            value=temperature,
            base=10,
            min=-2,
            max=2,
            step=0.05,
            description="temperature",
            readout_format=".2g",
            continuous_update=False,
            layout=widgets.Layout(width="480px"),
        )
        self.output = widgets.Output()
        self.result: dict | None = None
        self.text = ""
        self.examples.observe(self._use_example, names="value")
        self.query_box.observe(lambda _: self.update(), names="value")
        self.temperature.observe(lambda _: self.update(), names="value")
        super().__init__([widgets.HBox([self.query_box, self.examples]), self.temperature, self.output])
        self.update()

    def __repr__(self) -> str:  # what a page without a kernel (e.g. GitHub) shows instead of the widget
        return "[interactive video search: run this notebook in Jupyter to use it]"

    def _use_example(self, change) -> None:
        if change["new"] in vs.EXAMPLE_QUERIES:
            self.query_box.value = change["new"]  # triggers update() through the text box's observer

    def update(self) -> None:
        """Recompute the search for the current query and temperature; redraw the chart and the playlist."""
        query, temperature = self.query_box.value, self.temperature.value
        if self.examples.value != query:
            self.examples.value = _PICK  # the text was edited: the drop-down no longer names the query
        self.result = search(query, temperature)
        self.text = describe(self.result)
        # rendered to a PNG here and set as the Output widget's content (figure_outputs says why)
        figure = Figure(figsize=(10, 4))
        plot_search(self.result, query, temperature, axes=figure.subplots(1, 2, gridspec_kw={"width_ratios": [2.2, 1]}))
        self.output.outputs = figure_outputs(figure, self.text)


# --------------------------------------------------------------------------- notebook 08: the sampling lab


def sampling_distributions(
    model, prompt_ids: list[int], temperature: float, top_k: int | None, top_p: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's next-token probabilities after ``prompt_ids`` ``(vocab,)``, and the distribution sampling draws
    from after dividing by the temperature τ and filtering with top-k and top-p ``(vocab,)``."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids]))[0, -1]  # (vocab,)
    scaled = logits / temperature
    if top_k is not None:
        scaled = top_k_filter(scaled, top_k)
    if top_p is not None:
        scaled = top_p_filter(scaled, top_p)
    return softmax(logits), softmax(scaled)


def sampling_text(words, probabilities, filtered, continuation: str, top: int = 8) -> str:
    """The most likely next words with both probabilities, and a sampled continuation, as text."""
    order = probabilities.argsort(descending=True)[:top].tolist()
    kept = int((filtered > 0).sum())
    lines = [f"{'next word':>10s}  model  sampled from"]
    lines += [f"{words[i]:>10s}  {probabilities[i]:.3f}  {filtered[i]:.3f}" for i in order]
    lines.append(f"{kept} of {len(words)} words can be drawn; a sampled continuation: {continuation}")
    return "\n".join(lines)


class SamplingWidget(TextFallback, widgets.VBox):
    """Sliders for the temperature τ, top-k and top-p above the next-word probability bars and a sampled continuation.

    ``update()`` redraws on every change. After it, ``text`` holds the table and the continuation, which is also
    what a page without a kernel shows (``repr``, whole: ``TextFallback``), so static viewers get the numbers
    instead of an empty box, and the notebook need not print them again under the live widget.
    """

    def __init__(self, model, vocab, prompts: list[str], seed: int = 0, max_steps: int = 20):
        self.model, self.vocab, self.max_steps = model, vocab, max_steps
        self.prompt = widgets.Dropdown(options=prompts, value=prompts[0], description="prompt")
        self.temperature = widgets.FloatLogSlider(
            value=1.0, base=10, min=-1.5, max=0.7, step=0.05, description="τ", continuous_update=False
        )
        self.top_k = widgets.IntSlider(
            value=len(vocab), min=1, max=len(vocab), description="top-k", continuous_update=False
        )
        self.top_p = widgets.FloatSlider(
            value=1.0, min=0.05, max=1.0, step=0.05, description="top-p", continuous_update=False
        )
        self.seed = widgets.IntText(value=seed, description="seed", layout=widgets.Layout(width="160px"))
        self.output = widgets.Output()
        self.text = ""
        for control in (self.prompt, self.temperature, self.top_k, self.top_p, self.seed):
            control.observe(lambda _: self.update(), names="value")
        controls = widgets.HBox(
            [widgets.VBox([self.prompt, self.seed]), widgets.VBox([self.temperature, self.top_k, self.top_p])]
        )
        super().__init__([controls, self.output])
        self.update()

    def __repr__(self) -> str:  # a page without a kernel (e.g. GitHub) shows this instead of the widget
        return f"[sampling lab: run this notebook in Jupyter to move the sliders]\n{self.text}"

    def update(self) -> None:
        """Recompute the two distributions and a continuation for the current settings; redraw."""
        tau, k, p = self.temperature.value, self.top_k.value, self.top_p.value
        prompt_ids = [self.vocab.bos_id] + self.vocab.encode(self.prompt.value)
        probabilities, filtered = sampling_distributions(self.model, prompt_ids, tau, k, p)
        tokens = generate(
            self.model,
            torch.tensor([prompt_ids]),
            min(self.max_steps, self.model.max_len - len(prompt_ids)),  # no further than the model has positions
            sampler=sampler(temperature=tau, top_k=k, top_p=p),
            generator=torch.Generator().manual_seed(int(self.seed.value)),
        )[0, len(prompt_ids) :].tolist()
        words = [self.vocab.words[i] for i in tokens]
        continuation = " ".join(words[: words.index(".") + 1] if "." in words else words)
        self.text = sampling_text(self.vocab.words, probabilities, filtered, f"{self.prompt.value} {continuation}")
        figure = Figure(figsize=(8, 3.4))
        title = f'next word after "{self.prompt.value}"   (τ = {tau:.2g}, top-k = {k}, top-p = {p:.2f})'
        next_token_bars(self.vocab.words, probabilities, filtered, title, ax=figure.subplots())
        figure.tight_layout()
        self.output.outputs = figure_outputs(figure, self.text)
