"""Checks for exercise 05: LayerNorm and the residual (sublayer) connection.

Learner signatures:

    layer_norm(x, gamma, beta, eps=1e-5) -> same shape as x          normalise over the last axis
    sublayer_connection(x, sublayer, norm, norm_first=False) -> same shape as x
        post-LN (norm_first=False): norm(x + sublayer(x))
        pre-LN  (norm_first=True):  x + sublayer(norm(x))

References: ``course_lib.LayerNorm`` and ``course_lib.Residual`` with the same γ and β. ``layer_norm`` is tested on
every input form its docstring promises, ``(..., d_model)``: one token, 2-D, 3-D and 4-D inputs, and with an eps
other than the default, so a hard-coded axis, γ reshaped for 3-D inputs or an ignored eps fails.
"""

from __future__ import annotations

import torch

from .._standins import Sublayer
from ..blocks import LayerNorm, Residual
from . import trace
from .core import export_checks
from .judging import explains, same
from .spec import Case, CheckSpec, Mistake, TensorOut, generator, quiet_rng, randn

EPS = 1e-5


def _layer_norm_module(gamma: torch.Tensor, beta: torch.Tensor, eps: float = EPS) -> LayerNorm:
    with quiet_rng():
        norm = LayerNorm(gamma.shape[0], eps=eps)
    with torch.no_grad():
        norm.gamma.copy_(gamma)
        norm.beta.copy_(beta)
    norm.requires_grad_(False)
    return norm


# --------------------------------------------------------------------------- layer_norm


def _norm_case(kind: str, seed: int, d_model: int = 6):
    def build():
        gen = generator(seed)
        eps = EPS
        if kind == "ordinary":
            x = randn(gen, 2, 3, d_model, scale=3.0, shift=2.0)
        elif kind == "small":  # rows with a tiny spread, where eps matters, and one constant row (variance 0)
            x = randn(gen, 2, 4, d_model, scale=3.0)
            x[0, 1] = randn(gen, d_model, scale=1e-3, shift=0.01)
            x[1, 2] = randn(gen, d_model, scale=2e-3, shift=-0.02)
            x[1, 3] = 0.5
        elif kind == "4d":
            x = randn(gen, 2, 3, 4, d_model, scale=2.0, shift=-1.0)
        elif kind == "2d":
            x = randn(gen, 5, d_model, scale=2.0, shift=1.0)
        elif kind == "1d":
            x = randn(gen, d_model, scale=2.0)
        else:  # another eps: rows with a spread of about 0.3, where eps = 0.1 changes the result a lot
            x = randn(gen, 2, 3, d_model, scale=0.3, shift=1.0)
            eps = 0.1
        gamma = randn(gen, d_model, scale=0.5, shift=1.0)
        beta = randn(gen, d_model, scale=0.5)
        expected = _layer_norm_module(gamma, beta, eps)(x)
        return (x, gamma, beta, eps), expected

    return build


def reference_layer_norm(x, gamma, beta, eps=EPS):
    """course_lib's LayerNorm with γ and β as its parameters, differentiable in x, γ and β."""
    with quiet_rng():
        norm = LayerNorm(gamma.shape[0], eps=eps)
    return torch.func.functional_call(norm, {"gamma": gamma, "beta": beta}, (x,))


def _ln(x, gamma, beta, eps=EPS, dim=-1, unbiased=False, eps_where="inside", sqrt=True, center=True, affine="normal"):
    """LayerNorm with switches to reproduce each typical mistake."""
    mean = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    centred = x - mean if center else x
    if not sqrt:
        normed = centred / (var + eps)
    elif eps_where == "outside":
        normed = centred / (var.sqrt() + eps)
    elif eps_where == "none":
        normed = centred / var.sqrt()
    else:
        normed = centred / torch.sqrt(var + eps)
    if affine == "none":
        return normed
    if affine == "swapped":
        return normed * beta + gamma
    return normed * gamma + beta


def ln_over_batch(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, dim=0)


def _axis_probe(value, args) -> bool:
    x, gamma, beta, eps = args
    expected = _ln(x, gamma, beta, eps)
    choices = [d for d in range(x.dim() - 1)] + [tuple(range(x.dim())), tuple(range(1, x.dim()))]
    return any(
        explains(value, _ln(x, gamma, beta, eps, dim=d), expected) for d in choices if d not in ((), (x.dim() - 1,))
    )


def ln_fixed_axis(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, dim=2)


def _dim_out_of_range(exc: BaseException) -> bool:
    return isinstance(exc, IndexError) and "Dimension out of range" in str(exc)


def ln_gamma_for_3d(x, gamma, beta, eps=EPS):
    return _ln(x, gamma.view(1, 1, -1), beta.view(1, 1, -1), eps)


def _gamma_for_3d_probe(value, args) -> bool:
    x = args[0]
    if not isinstance(value, torch.Tensor) or x.dim() >= 3 or value.dim() != 3:
        return False
    return same(value.reshape(x.shape), _ln(*args)) and tuple(value.shape) == (1,) * (3 - x.dim()) + tuple(x.shape)


def ln_ignores_eps(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, EPS)


OTHER_EPS = (1e-12, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0)


def _ignores_eps_probe(value, args) -> bool:
    """The output is LayerNorm with some fixed eps instead of the eps argument."""
    x, gamma, beta, eps = args
    expected = _ln(x, gamma, beta, eps)
    return any(explains(value, _ln(x, gamma, beta, other), expected) for other in OTHER_EPS if other != eps)


def ln_unbiased(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, unbiased=True)


def ln_std_unbiased(x, gamma, beta, eps=EPS):
    return (x - x.mean(dim=-1, keepdim=True)) / (x.std(dim=-1, keepdim=True) + eps) * gamma + beta


def ln_no_eps(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, eps_where="none")


def ln_eps_outside(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, eps_where="outside")


def ln_no_sqrt(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, sqrt=False)


def ln_no_affine(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, affine="none")


def ln_swapped_affine(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, affine="swapped")


def ln_not_centred(x, gamma, beta, eps=EPS):
    return _ln(x, gamma, beta, eps, center=False)


LN_MISTAKES = [
    Mistake(
        "wrong_axis",
        "the mean and variance are taken over the wrong axis (or over every axis)",
        "LayerNorm normalises each token on its own: take the mean and the variance over the last axis only "
        "(dim=-1, with keepdim=True). Over the batch axis it would be BatchNorm, and one example would change "
        "another's output.",
        ln_over_batch,
        probe=_axis_probe,
    ),
    Mistake(
        "fixed_axis_number",
        "the axis is given as a fixed number (dim=2), which is not the last axis for every input",
        "The docstring promises x of shape (..., d_model): one token (d_model,), (tokens, d_model), "
        "(batch, seq, d_model) or more axes. dim=-1 always means the features.",
        ln_fixed_axis,
        raises=_dim_out_of_range,
    ),
    Mistake(
        "gamma_reshaped_for_3d",
        "γ and β are reshaped for 3-D inputs (e.g. .view(1, 1, -1)), which adds axes to a 1-D or 2-D input",
        "γ and β of shape (d_model,) already broadcast against (..., d_model) for any number of leading axes: "
        "use them as they are.",
        ln_gamma_for_3d,
        probe=_gamma_for_3d_probe,
    ),
    Mistake(
        "ignores_eps",
        "the eps argument is not used: your output matches LayerNorm with a fixed eps, not the one passed in",
        "The caller chooses eps (the check passes different values): use the parameter eps, not a number written "
        "into the function.",
        ln_ignores_eps,
        probe=_ignores_eps_probe,
    ),
    Mistake(
        "unbiased_variance",
        "the variance is the unbiased one (divided by d_model - 1)",
        "LayerNorm uses the plain (biased) variance, the mean of the squared deviations: "
        "x.var(dim=-1, keepdim=True, unbiased=False). torch.var and torch.std are unbiased by default.",
        ln_unbiased,
        variants=(ln_std_unbiased,),
    ),
    Mistake(
        "no_eps",
        "eps is missing, so a row with (almost) no spread divides by (almost) zero",
        "Add eps inside the square root: (x - mean) / torch.sqrt(var + eps). A constant row has variance 0, and "
        "0 / 0 is NaN.",
        ln_no_eps,
    ),
    Mistake(
        "eps_outside_sqrt",
        "eps is added after the square root instead of inside it",
        "The formula is (x - mean) / √(var + eps). For rows with a tiny spread, √var + eps and √(var + eps) differ a "
        "lot.",
        ln_eps_outside,
    ),
    Mistake(
        "no_sqrt",
        "you divide by the variance instead of the standard deviation",
        "Divide by the square root: torch.sqrt(var + eps), so the result has variance 1.",
        ln_no_sqrt,
    ),
    Mistake(
        "no_gamma_beta",
        "the learned scale γ and shift β are not applied",
        "Finish with gamma * normalised + beta: γ and β let the model undo the normalisation where it helps.",
        ln_no_affine,
    ),
    Mistake(
        "gamma_beta_swapped",
        "γ and β are swapped",
        "γ (gamma) multiplies and β (beta) is added: gamma * normalised + beta.",
        ln_swapped_affine,
    ),
    Mistake(
        "not_centred",
        "the mean is not subtracted",
        "Centre first: subtract each token's mean (over the last axis), then divide by the standard deviation.",
        ln_not_centred,
    ),
]


def _ln_diagnose(value, expected, args) -> str | None:
    x, gamma, beta, eps = args
    if not isinstance(value, torch.Tensor) or value.shape != expected.shape:
        return None
    normed = (value.double() - beta.double()) / gamma.double()
    mean = normed.mean(dim=-1)
    if not torch.allclose(mean, torch.zeros_like(mean), atol=1e-3):
        return "Before γ and β, each token's vector should have mean 0; (output - beta) / gamma of yours does not."
    return None


LN_SPEC = CheckSpec(
    name="check_layer_norm",
    function="layer_norm",
    arg_names=("x", "gamma", "beta", "eps"),
    output=TensorOut("(same shape as x)"),
    cases=[
        Case("ordinary tokens", _norm_case("ordinary", 501)),
        Case("tokens with a tiny spread and a constant token", _norm_case("small", 502)),
        Case("a 2-D input (tokens, d_model)", _norm_case("2d", 504)),
        Case("a 4-D input (..., d_model)", _norm_case("4d", 503)),
        Case("a single token (d_model,)", _norm_case("1d", 505)),
        Case("eps = 0.1 on tokens with a small spread", _norm_case("eps", 506)),
        Case("d_model 10 instead of 6", _norm_case("ordinary", 507, d_model=10)),
    ],
    mistakes=LN_MISTAKES,
    success="Each token is normalised over its features (biased variance, eps inside the root), then scaled and shifted.",
    diagnose=_ln_diagnose,
    reference=reference_layer_norm,
)


# --------------------------------------------------------------------------- sublayer_connection


def _residual_case(seed: int, norm_first: bool, batch: int, seq: int, d_model: int = 6):
    def build():
        gen = generator(seed)
        x = randn(gen, batch, seq, d_model, scale=2.0, shift=0.5)
        sublayer = Sublayer(randn(gen, d_model, d_model, scale=0.7), randn(gen, d_model, scale=0.5))
        norm = _layer_norm_module(randn(gen, d_model, scale=0.5, shift=1.0), randn(gen, d_model, scale=0.5))
        with quiet_rng():
            residual = Residual(d_model, norm_first=norm_first)
        residual.norm = norm
        residual.requires_grad_(False)
        expected = residual(x, sublayer)
        return (x, sublayer, norm, norm_first), expected

    return build


def _connect(x, sublayer, norm, norm_first, how="right"):
    """The sublayer connection with switches to reproduce each typical mistake."""
    if how == "flipped":
        norm_first = not norm_first
    if not norm_first:
        if how == "outside":
            return x + norm(sublayer(x))
        if how == "no_residual":
            return norm(sublayer(x))
        if how == "no_norm":
            return x + sublayer(x)
        return norm(x + sublayer(x))  # the pre-LN mistakes leave the post-LN branch right
    if how == "normed_skip":
        return norm(x) + sublayer(norm(x))
    if how == "norm_on_output":
        return x + norm(sublayer(x))
    if how == "no_residual":
        return sublayer(norm(x))
    if how == "no_norm":
        return x + sublayer(x)
    return x + sublayer(norm(x))  # the post-LN mistake leaves the pre-LN branch right


def residual_outside_norm(x, sublayer, norm, norm_first=False):
    return _connect(x, sublayer, norm, norm_first, "outside")


def residual_normed_skip(x, sublayer, norm, norm_first=False):
    return _connect(x, sublayer, norm, norm_first, "normed_skip")


def residual_norm_on_output(x, sublayer, norm, norm_first=False):
    return _connect(x, sublayer, norm, norm_first, "norm_on_output")


def residual_missing(x, sublayer, norm, norm_first=False):
    return _connect(x, sublayer, norm, norm_first, "no_residual")


def residual_no_norm(x, sublayer, norm, norm_first=False):
    return _connect(x, sublayer, norm, norm_first, "no_norm")


def residual_ignores_norm_first(x, sublayer, norm, norm_first=False):
    return _connect(x, sublayer, norm, norm_first, "flipped")


RESIDUAL_MISTAKES = [
    Mistake(
        "residual_outside_norm",
        "post-LN: the skip is added after the norm, x + norm(sublayer(x))",
        "Post-LN normalises the sum of the skip and the sublayer's output: add first, then normalise.",
        residual_outside_norm,
    ),
    Mistake(
        "normed_skip",
        "pre-LN: the normalised x is added back instead of the original x",
        "In pre-LN only the sublayer's input is normalised; the skip carries the untouched x. That clean path is "
        "what lets deep pre-LN stacks train.",
        residual_normed_skip,
    ),
    Mistake(
        "norm_on_output",
        "pre-LN: the norm is applied to the sublayer's output instead of its input",
        "Pre-LN normalises what goes INTO the sublayer; the sublayer's output is added to x as it is.",
        residual_norm_on_output,
    ),
    Mistake(
        "no_residual",
        "the skip connection is missing: x is never added back",
        "The residual connection adds the input x back to the sublayer's output, in both variants; only the "
        "place of the norm differs.",
        residual_missing,
    ),
    Mistake(
        "no_norm",
        "the norm is never applied",
        "Use the norm you are given: post-LN normalises after the addition, pre-LN normalises the sublayer's input.",
        residual_no_norm,
    ),
    Mistake(
        "ignores_norm_first",
        "you computed the other variant: post-LN where norm_first asks for pre-LN, or the reverse",
        "Your output equals the other variant. norm_first=False asks for post-LN and norm_first=True for pre-LN: "
        "branch on the flag, the right way round.",
        residual_ignores_norm_first,
    ),
]


def _residual_stages(function, args, expected) -> str | None:
    norm_first = args[3]
    return trace.part_stages(
        function, args, {1: "sublayer", 2: "norm"}, lambda *a: _connect(*a), "pre-LN" if norm_first else "post-LN"
    )


def reference_residual(x, sublayer, norm, norm_first=False):
    """course_lib's Residual around ``sublayer`` with the given norm, differentiable in x."""
    with quiet_rng():
        residual = Residual(x.shape[-1], norm_first=norm_first)
    residual.norm = norm
    return residual(x, sublayer)


RESIDUAL_SPEC = CheckSpec(
    name="check_sublayer_connection",
    function="sublayer_connection",
    arg_names=("x", "sublayer", "norm", "norm_first"),
    output=TensorOut("(batch, seq, d_model)"),
    cases=[
        Case("post-LN", _residual_case(511, norm_first=False, batch=2, seq=3)),
        Case("pre-LN", _residual_case(512, norm_first=True, batch=2, seq=3)),
        Case("post-LN, one sequence of 4 tokens, d_model 10", _residual_case(513, False, batch=1, seq=4, d_model=10)),
        Case("pre-LN, 3 sequences of 2 tokens, d_model 10", _residual_case(514, True, batch=3, seq=2, d_model=10)),
    ],
    mistakes=RESIDUAL_MISTAKES,
    success="post-LN: norm(x + sublayer(x)); pre-LN: x + sublayer(norm(x)).",
    stages=_residual_stages,
    reference=reference_residual,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
