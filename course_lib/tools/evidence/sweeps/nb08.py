"""Notebook 08's sweep: the small language model and its baselines on the relative-clause corpus, over seeds."""

from __future__ import annotations

import contextlib
import io

import torch

from course_lib.decoder import DecoderLM
from course_lib.lab.lm_baselines import LSTMLM, BigramLM, UnigramLM, train_lm, validation_loss
from course_lib.lab.models import count_parameters
from course_lib.lab.tasks import relative_clauses as rc

from .common import Table, count, progress, span


def subject_weight(model: DecoderLM, items) -> tuple[float, float, float]:
    """For the head with the largest mean weight from the closing comma to the subject (block 0): that mean, the
    median over the items, and the share of items whose strongest key from the comma is the subject."""
    batch = rc.agreement_batch(items)
    with torch.no_grad():
        model(batch["tokens"])
    weights = model.attention_weights[0]  # (n, heads, seq, seq)
    rows = torch.arange(len(items))
    on_subject = weights[rows, :, batch["last"], batch["subject"]]  # (n, heads)
    best = int(on_subject.mean(dim=0).argmax())
    from_comma = weights[rows, best, batch["last"]]  # (n, seq)
    top = (from_comma.argmax(dim=-1) == batch["subject"]).float().mean().item()
    return on_subject[:, best].mean().item(), on_subject[:, best].median().item(), top


def language_model(
    seeds, *, steps: int = 900, lr: float = 3e-3, d_model: int = 64, num_heads: int = 2, n_blocks: int = 1
) -> Table:
    """Section 3: the notebook's corpus (seed 0) and test items (seed 1); model weights and batches from ``seed``."""
    table = Table(
        f"Notebook 08: decoder LM vs baselines, {steps} steps at lr {lr} (batch 32)",
        [
            "seed",
            "unigram loss",
            "bigram loss",
            "Transformer loss",
            "LSTM loss",
            "bigram agr.",
            "LSTM agr.",
            "Transformer agr.",
            "head weight on subject",
            "median",
            "subject top key",
        ],
    )
    corpus = rc.RelativeClauseCorpus(6000, seed=0)
    vocab_size = len(corpus.vocab)
    validation = corpus.validation_batch()
    items = list(rc.agreement_items(400, seed=1))
    unigram, bigram = UnigramLM(corpus.train, vocab_size), BigramLM(corpus.train, vocab_size)
    loss_u, loss_b = validation_loss(unigram, validation), validation_loss(bigram, validation)
    agreement_b = rc.agreement_accuracy(bigram, items)
    transformer_agreement, lstm_agreement, margins_u, margins_b, heads, tops = [], [], [], [], [], []
    for seed in seeds:
        torch.manual_seed(seed)
        model = DecoderLM(vocab_size, d_model, num_heads, n_blocks, 2 * d_model, max_len=rc.MAX_LEN)
        hidden = LSTMLM.hidden_for(count_parameters(model), vocab_size, d_model)
        with contextlib.redirect_stdout(io.StringIO()):
            train_lm(model, corpus.batch, steps, lr=lr, seed=seed)
            torch.manual_seed(seed)
            lstm = LSTMLM(vocab_size, d_model, hidden)
            train_lm(lstm, corpus.batch, steps, lr=lr, seed=seed)
        model.eval()
        loss_t, loss_l = validation_loss(model, validation), validation_loss(lstm, validation)
        agreement_t, agreement_l = rc.agreement_accuracy(model, items), rc.agreement_accuracy(lstm, items)
        head, median, top = subject_weight(model, items)
        transformer_agreement.append(agreement_t)
        lstm_agreement.append(agreement_l)
        margins_u.append(loss_u - loss_t)
        margins_b.append(loss_b - loss_t)
        heads.append(head)
        table.add(seed, loss_u, loss_b, loss_t, loss_l, agreement_b, agreement_l, agreement_t, head, median, top)
        tops.append(top)
        progress(f"seed {seed}: Transformer loss {loss_t:.3f}, agreement {agreement_t:.3f}, LSTM {agreement_l:.3f}")
    table.notes += [
        f"Transformer beats the unigram by {span(margins_u, 2)} and the bigram by {span(margins_b, 2)} nats/token.",
        f"Agreement: bigram {agreement_b:.3f}; Transformer {span(transformer_agreement)} "
        f"(≥ 0.9 in {count([a >= 0.9 for a in transformer_agreement])}); "
        f"LSTM {span(lstm_agreement)} (≥ 0.9 in {count([a >= 0.9 for a in lstm_agreement])}).",
        f"Best head's weight on the subject: {span(heads, 2)} (≥ 0.4 in {count([h >= 0.4 for h in heads])}); "
        f"the subject is its strongest key from the comma in {span(tops, 2)} of the items.",
    ]
    return table
