"""Exercise 05: layer_norm, sublayer_connection and the experiment, as learners write them."""

import torch
import torch.nn.functional as F

from course_lib.checks import short_training

from . import right, wrong

LN, RESIDUAL, EXPERIMENT = "check_layer_norm", "check_sublayer_connection", "check_experiment"


def _stats(x):
    mean = x.mean(dim=-1, keepdim=True)
    return mean, ((x - mean) ** 2).mean(dim=-1, keepdim=True)


# ----------------------------------------------------------------------------------------------- layer_norm, wrong


@wrong(LN, "unbiased_variance")
def ln_unbiased_variance(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) + beta


@wrong(LN, "eps_outside_sqrt")
def ln_eps_outside_sqrt(x, gamma, beta, eps=1e-5):
    mean, var = _stats(x)
    return gamma * (x - mean) / (torch.sqrt(var) + eps) + beta


@wrong(LN, "wrong_axis")
def ln_over_axis_0(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=0, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=0, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


@wrong(LN, "wrong_values")
def ln_over_axis_1(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


@wrong(LN, "gamma_beta_swapped")
def ln_gamma_beta_swapped(x, gamma, beta, eps=1e-5):
    mean, var = _stats(x)
    return beta * (x - mean) / torch.sqrt(var + eps) + gamma


@wrong(LN, "wrong_values")
def ln_no_beta(x, gamma, beta, eps=1e-5):
    mean, var = _stats(x)
    return gamma * (x - mean) / torch.sqrt(var + eps)


@wrong(LN, "ignores_eps")
def ln_eps_written_in(x, gamma, beta, eps=1e-5):
    mean, var = _stats(x)
    return gamma * (x - mean) / torch.sqrt(var + 1e-5) + beta


@wrong(LN, "wrong_axis")
def ln_statistics_of_everything(x, gamma, beta, eps=1e-5):
    mean = x.mean()
    return gamma * (x - mean) / torch.sqrt(((x - mean) ** 2).mean() + eps) + beta


@wrong(LN, "mutates_input")
def ln_centred_in_place(x, gamma, beta, eps=1e-5):
    x -= x.mean(dim=-1, keepdim=True).detach()
    var = (x**2).mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt(var + eps) + beta


@wrong(LN, "wrong_values")
def ln_rms_norm(x, gamma, beta, eps=1e-5):
    return gamma * x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps) + beta  # not centred


@wrong(LN, "ignores_eps")
def ln_library_default_eps(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], gamma, beta)  # eps left at its default


@wrong(LN, "no_sqrt")
def ln_no_sqrt(x, gamma, beta, eps=1e-5):
    mean, var = _stats(x)
    return gamma * (x - mean) / (var + eps) + beta


@wrong(LN, None)
def ln_mean_without_keepdim(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1)
    var = ((x - mean) ** 2).mean(dim=-1)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


@wrong(LN, "wrong_values")
def ln_std_plus_eps_squared(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / (x.std(dim=-1, unbiased=False, keepdim=True) + eps**0.5) + beta


# ----------------------------------------------------------------------------------------------- layer_norm, right


@right(LN)
def ln_library_with_eps(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


@right(LN)
def ln_rsqrt_var_mean(x, gamma, beta, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(beta, gamma, (x - mean) * torch.rsqrt(var + eps))


@right(LN)
def ln_float64_inside(x, gamma, beta, eps=1e-5):
    d = x.double()
    centred = d - d.mean(-1, keepdim=True)
    normed = centred / (centred.pow(2).sum(-1, keepdim=True) / d.shape[-1] + eps).sqrt()
    return (normed * gamma.double() + beta.double()).to(x.dtype)


# ----------------------------------------------------------------------------------------------- residual, wrong


@wrong(RESIDUAL, "residual_outside_norm")
def residual_post_ln_outside_norm(x, sublayer, norm, norm_first=False):
    if norm_first:
        return x + sublayer(norm(x))
    return x + norm(sublayer(x))


@wrong(RESIDUAL, "normed_skip")
def residual_pre_ln_skip_normalised(x, sublayer, norm, norm_first=False):
    if norm_first:
        h = norm(x)
        return h + sublayer(h)
    return norm(x + sublayer(x))


@wrong(RESIDUAL, "ignores_norm_first")
def residual_branches_swapped(x, sublayer, norm, norm_first=False):
    if not norm_first:
        return x + sublayer(norm(x))
    return norm(x + sublayer(x))


@wrong(RESIDUAL, "norm_on_output")
def residual_pre_ln_norm_after(x, sublayer, norm, norm_first=False):
    if norm_first:
        return x + norm(sublayer(x))
    return norm(x + sublayer(x))


@wrong(RESIDUAL, "no_residual")
def residual_missing(x, sublayer, norm, norm_first=False):
    if norm_first:
        return sublayer(norm(x))
    return norm(sublayer(x))


@wrong(RESIDUAL, "ignores_norm_first")
def residual_norm_first_ignored(x, sublayer, norm, norm_first=False):
    return norm(x + sublayer(x))


@wrong(RESIDUAL, "wrong_values")
def residual_normalised_twice(x, sublayer, norm, norm_first=False):
    if norm_first:
        return norm(x + sublayer(norm(x)))
    return norm(x + sublayer(x))


@wrong(RESIDUAL, "wrong_values")
def residual_post_ln_sublayer_on_norm(x, sublayer, norm, norm_first=False):
    if norm_first:
        return x + sublayer(norm(x))
    return norm(x + sublayer(norm(x)))


@wrong(RESIDUAL, "mutates_input")
def residual_in_place_add(x, sublayer, norm, norm_first=False):
    if norm_first:
        x += sublayer(norm(x))
        return x
    return norm(x + sublayer(x))


# ----------------------------------------------------------------------------------------------- residual, right


@right(RESIDUAL)
def residual_one_expression(x, sublayer, norm, norm_first=False):
    inner = sublayer(norm(x) if norm_first else x)
    total = torch.add(x, inner)
    return total if norm_first else norm(total)


@right(RESIDUAL)
def residual_table_of_wirings(x, sublayer, norm, norm_first=False):
    wirings = {
        True: lambda: x + sublayer(norm(x)),
        False: lambda: norm(x + sublayer(x)),
    }
    return wirings[bool(norm_first)]()


# ----------------------------------------------------------------------------------------------- experiment, wrong


@wrong(EXPERIMENT, "nothing_changed", slow=True)
def experiment_baseline_unchanged(seed):
    return short_training(seed)


@wrong(EXPERIMENT, "other_setting", slow=True)
def experiment_norm_switched_off(seed):
    return short_training(seed, layer_norm=False)


@wrong(EXPERIMENT, "ignores_seed", slow=True)
def experiment_seed_ignored(seed):
    return short_training(0, residual=False)


@wrong(EXPERIMENT, "wrong_values", slow=True)
def experiment_two_settings_changed(seed):
    return short_training(seed, residual=False, n_blocks=4)


@wrong(EXPERIMENT, "wrong_shape", slow=True)
def experiment_final_loss_only(seed):
    return short_training(seed, residual=False)[-1]


@wrong(EXPERIMENT, "other_budget", slow=True)
def experiment_fewer_steps(seed):
    return short_training(seed, residual=False, steps=10)


@wrong(EXPERIMENT, "wrong_values", slow=True)
def experiment_next_seed(seed):
    return short_training(seed + 1, residual=False)


_FIRST_RUN: list = []


@wrong(EXPERIMENT, "wrong_values", slow=True)
def experiment_cached_across_seeds(seed):
    if not _FIRST_RUN:  # "training is slow, keep the result": the cache forgets which seed it was for
        _FIRST_RUN.append(short_training(seed, residual=False))
    return _FIRST_RUN[0]


@right(EXPERIMENT, slow=True)
def experiment_every_setting_spelled_out(seed):
    return short_training(seed=seed, residual=False, layer_norm=True, n_blocks=8, steps=20)


@wrong(LN, "wrong_gradient")
def ln_module_with_copied_parameters(x, gamma, beta, eps=1e-5):
    layer = torch.nn.LayerNorm(x.shape[-1], eps=eps)
    layer.weight.data = gamma  # the values are gamma's, but the gradient goes to the module's own parameter
    layer.bias.data = beta
    return layer(x)


@wrong(LN, "wrong_values")
def ln_d_model_written_in(x, gamma, beta, eps=1e-5):
    mean = x.sum(dim=-1, keepdim=True) / 6  # d_model of the printed example
    var = ((x - mean) ** 2).sum(dim=-1, keepdim=True) / 6
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


@wrong(RESIDUAL, None)
def residual_shape_written_in(x, sublayer, norm, norm_first=False):
    tokens = x.reshape(6, 6)  # "one row per token": 2 sequences of 3 tokens, as printed
    if norm_first:
        return (tokens + sublayer(norm(x)).reshape(6, 6)).reshape(2, 3, 6)
    return norm((tokens + sublayer(x).reshape(6, 6)).reshape(2, 3, 6))
