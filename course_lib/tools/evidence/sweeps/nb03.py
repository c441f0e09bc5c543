"""Notebook 03's sweeps: heads that specialise on the agreement grammar, and the head that takes a shortcut."""

from __future__ import annotations

import torch
from torch import nn

from course_lib.lab.models import TransformerClassifier
from course_lib.lab.tasks import agreement

from .common import Table, count, lesson_code, progress, span, train_quietly

LESSON = lesson_code("03", "evaluate", "weight_on")  # the notebook's measurements of a trained model
evaluate, weight_on = LESSON.evaluate, LESSON.weight_on


def make_model(
    num_heads: int, target: str, seed: int, token_std: float | None = 0.02, d_model: int = 32, d_ff: int = 64
) -> TransformerClassifier:
    """Notebook 03's model: one block, learned positions, read out at [V]; token vectors at std 0.02."""
    torch.manual_seed(seed)
    model = TransformerClassifier(
        agreement.VOCAB_SIZE,
        agreement.NUM_CLASSES[target],
        d_model=d_model,
        num_heads=num_heads,
        d_ff=d_ff,
        max_len=agreement.MAX_LEN,
        positions="learned",
        readout="last",
    )
    if token_std is not None:
        nn.init.normal_(model.embedding.weight, std=token_std)
    return model


@torch.no_grad()
def split(result: dict, threshold: float = 0.7) -> tuple[bool, float, float]:
    """The notebook's test: the best subject head ≥ threshold and a *different* head ≥ threshold on the clause noun."""
    subject_head = result["subject"].argmax().item()
    others = [h for h in range(len(result["subject"])) if h != subject_head]
    clause_head = max(others, key=lambda h: result["clause noun"][h].item())
    best_subject, best_clause = result["subject"][subject_head].item(), result["clause noun"][clause_head].item()
    return best_subject >= threshold and best_clause >= threshold, best_subject, best_clause


def head_split(
    seeds,
    *,
    num_heads: int = 4,
    d_model: int = 64,
    d_ff: int | None = None,
    steps: int = 400,
    stop_below: float = 0.05,
    token_std: float = 0.02,
    default_init_too: bool = True,
) -> Table:
    """Section 4.4: does one head take the subject and another the clause noun? With the notebook's token init
    (std 0.02) and, for comparison, with nn.Embedding's default (std 1); each model trained as the notebook trains
    it, until solved (the mean loss of 20 steps below ``stop_below``) or for ``steps`` steps. ``d_ff`` defaults to
    ``2 * d_model``, as in the notebook's ``make_model``, so ``--set d_model=32`` gives the narrower model of its
    section 4.2."""
    d_ff = 2 * d_model if d_ff is None else d_ff
    test = agreement.agreement_batch(2000, torch.Generator().manual_seed(2024), target="both")
    inits = [token_std] + ([None] if default_init_too else [])
    table = Table(
        f"{num_heads} heads (d_model {d_model}, d_ff {d_ff}), both questions, until the mean loss of 20 steps < "
        f"{stop_below:g} or {steps} steps: the best head on the subject, a different head on the clause noun",
        ["seed", "token init", "steps", "accuracy", "subject head", "clause head (another)", "split (both ≥ 0.7)"],
    )
    splits: dict = {init: [] for init in inits}
    at_06: dict = {init: [] for init in inits}
    for init in inits:
        for seed in seeds:
            model = make_model(num_heads, "both", seed, init, d_model=d_model, d_ff=d_ff)
            history = train_quietly(model, agreement.agreement_batches("both"), steps, seed=seed, stop_below=stop_below)
            with torch.no_grad():
                result = evaluate(model, test)
            ok, subject, clause = split(result)
            label = f"std {init}" if init is not None else "default (std 1)"
            table.add(seed, label, len(history["loss"]), result["accuracy"], subject, clause, ok)
            splits[init].append(ok)
            at_06[init].append(split(result, threshold=0.6)[0])
            progress(
                f"{label}, seed {seed}: accuracy {result['accuracy']:.3f}, subject {subject:.2f}, clause {clause:.2f}"
            )
    for init in inits:
        label = f"token vectors at std {init}" if init is not None else "default token init (std 1)"
        table.notes.append(
            f"{label}: the heads split in {count(splits[init])} seeds (both ≥ 0.6, as the notebook asserts: "
            f"{count(at_06[init])})"
        )
    return table


def agreement_heads(seeds, *, steps: int = 250) -> Table:
    """Sections 4.2 and 4.3: one head on the subject question, with 'which chased' and with 'which was/were chasing'."""
    tests = {
        "past": agreement.agreement_batch(2000, torch.Generator().manual_seed(2024), target="subject"),
        "progressive": agreement.agreement_batch(
            2000, torch.Generator().manual_seed(2024), target="subject", clause_verb="progressive"
        ),
    }
    auxiliaries = torch.tensor([agreement.WORD_TO_ID["was"], agreement.WORD_TO_ID["were"]])
    table = Table(
        f"One head, subject number only, {steps} steps",
        [
            "seed",
            "'chased': accuracy",
            "attractor accuracy",
            "on subject",
            "'was chasing': accuracy",
            "on subject",
            "on was/were",
        ],
    )
    columns: dict[str, list[float]] = {"subject": [], "attractor": [], "shortcut aux": [], "shortcut subject": []}
    for seed in seeds:
        row = {}
        for clause_verb, test in tests.items():
            model = make_model(1, "subject", seed)
            train_quietly(model, agreement.agreement_batches("subject", clause_verb=clause_verb), steps, seed=seed)
            row[clause_verb] = evaluate(model, test)
        past, prog = row["past"], row["progressive"]
        on_aux = torch.isin(prog["strongest token"], auxiliaries).float().mean().item()
        table.add(
            seed,
            past["accuracy"],
            past["attractor accuracy"],
            past["subject"][0].item(),
            prog["accuracy"],
            prog["subject"][0].item(),
            on_aux,
        )
        columns["subject"].append(past["subject"][0].item())
        columns["attractor"].append(past["attractor accuracy"])
        columns["shortcut aux"].append(on_aux)
        columns["shortcut subject"].append(prog["subject"][0].item())
        progress(f"seed {seed}: on subject {past['subject'][0].item():.2f}; with was/were: on auxiliary {on_aux:.2f}")
    table.notes += [
        f"'which chased': attractor accuracy {span(columns['attractor'])}; strongest link on the subject "
        f"{span(columns['subject'], 2)} (the notebook asserts ≥ 0.85: holds in {count([v >= 0.85 for v in columns['subject']])} seeds)",
        f"'which was/were chasing': on was/were {span(columns['shortcut aux'], 2)} (asserts ≥ 0.8: holds in "
        f"{count([v >= 0.8 for v in columns['shortcut aux']])}), on the subject {span(columns['shortcut subject'], 2)} "
        f"(asserts ≤ 0.2: holds in {count([v <= 0.2 for v in columns['shortcut subject']])})",
    ]
    return table


def one_head(
    seeds, *, d_model: int = 64, steps: int = 400, stop_below: float = 0.05, token_std: float = 0.02, num_heads: int = 4
) -> Table:
    """Section 4.6: ONE head of the same width on both questions, beside the notebook's ``num_heads`` heads, each
    trained until solved (the mean loss of 20 steps below ``stop_below``) or for ``steps`` steps. Per seed: the
    accuracies, the steps each took, the one head's mean weight from [V] on the subject and on the clause noun, and the
    several heads' best mean weight on each noun (as the notebook measures them)."""
    test = agreement.agreement_batch(2000, torch.Generator().manual_seed(2024), target="both")
    table = Table(
        f"1 head vs {num_heads} heads (d_model {d_model}, d_ff {2 * d_model}), both questions, until the mean loss "
        f"of 20 steps < {stop_below:g} or {steps} steps",
        [
            "seed",
            "1 head: accuracy",
            "steps",
            "weight on subject",
            "on clause noun",
            f"{num_heads} heads: accuracy",
            "steps",
            "best head on subject",
            "best head on clause noun",
        ],
    )
    one, several, spread, sharp, one_steps, several_steps = [], [], [], [], [], []
    for seed in seeds:
        results = {}
        for heads in (1, num_heads):
            model = make_model(heads, "both", seed, token_std, d_model=d_model, d_ff=2 * d_model)
            history = train_quietly(model, agreement.agreement_batches("both"), steps, seed=seed, stop_below=stop_below)
            with torch.no_grad():
                accuracy = evaluate(model, test)["accuracy"]
                subject = weight_on(model, test, test.subject_pos).max().item()
                clause = weight_on(model, test, test.clause_pos).max().item()
            results[heads] = (accuracy, len(history["loss"]), subject, clause)
        table.add(seed, *results[1], *results[num_heads])
        one.append(results[1][0])
        several.append(results[num_heads][0])
        if results[1][0] >= 0.95:
            spread.append(min(results[1][2:]))
            one_steps.append(results[1][1])
        if results[num_heads][0] >= 0.95:
            several_steps.append(results[num_heads][1])
        sharp.append(min(results[num_heads][2:]))
        progress(f"seed {seed}: 1 head {results[1]}, {num_heads} heads {results[num_heads]}")
    table.notes += [
        f"1 head: accuracy {span(one)}, ≥ 0.95 in {count([a >= 0.95 for a in one])} seeds, after {span(one_steps, 0)} "
        f"steps; where it answers both, its smaller weight on a noun {span(spread, 2)}",
        f"{num_heads} heads: accuracy {span(several)}, ≥ 0.95 in {count([a >= 0.95 for a in several])} seeds, after "
        f"{span(several_steps, 0)} steps; the best heads' weights on their nouns at least {span(sharp, 2)}",
    ]
    return table
