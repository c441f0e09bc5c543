"""Copying PyTorch's own modules into course_lib's (the ``load_from_torch`` methods), and what cannot be copied.

The notebooks prove a building block right by copying the weights of PyTorch's version into ours and comparing
outputs. Each function refuses (``CourseInputError``) what it cannot copy exactly, before copying anything, so a
module is never half-copied.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import CourseInputError


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise CourseInputError(message)


@torch.no_grad()
def copy_multihead(ours, mha: nn.MultiheadAttention):
    """``MultiHeadAttention.load_from_torch``: W_Q, W_K, W_V from torch's stacked ``in_proj``, W_O from ``out_proj``."""
    _require(
        isinstance(mha, nn.MultiheadAttention), f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}"
    )
    _require(
        mha.embed_dim == ours.d_model and mha.num_heads == ours.num_heads,
        f"cannot copy from embed_dim={mha.embed_dim}, num_heads={mha.num_heads} "
        f"into d_model={ours.d_model}, num_heads={ours.num_heads}",
    )
    _require(
        ours.n_kv_heads == ours.num_heads,
        f"cannot copy into grouped-query attention (n_kv_heads={ours.n_kv_heads}): torch's module has a key and "
        "value head for every query head",
    )
    _require(
        mha.in_proj_weight is not None,
        "only nn.MultiheadAttention with equal query/key/value sizes (kdim = vdim = embed_dim) can be copied",
    )
    _require(
        mha.bias_k is None and mha.bias_v is None and not mha.add_zero_attn,
        "cannot copy an nn.MultiheadAttention with add_bias_kv=True or add_zero_attn=True: they add a key and "
        "value that this module does not have",
    )
    theirs, has_bias = mha.in_proj_bias is not None, ours.w_q.bias is not None
    _require(
        theirs == has_bias and (mha.out_proj.bias is not None) == has_bias,
        f"cannot copy: the torch module has {'biases' if theirs else 'no biases'} and this one "
        f"{'has' if has_bias else 'has none'}; create MultiHeadAttention({ours.d_model}, {ours.num_heads}, bias={theirs})",
    )
    for linear, weight in zip((ours.w_q, ours.w_k, ours.w_v), mha.in_proj_weight.chunk(3, dim=0)):
        linear.weight.copy_(weight)
    ours.w_o.weight.copy_(mha.out_proj.weight)
    if has_bias:
        for linear, bias in zip((ours.w_q, ours.w_k, ours.w_v), mha.in_proj_bias.chunk(3, dim=0)):
            linear.bias.copy_(bias)
        ours.w_o.bias.copy_(mha.out_proj.bias)
    return ours


@torch.no_grad()
def copy_layer_norm(ours, norm: nn.LayerNorm):
    """``LayerNorm.load_from_torch``: γ from ``weight``, β from ``bias``, and eps."""
    _require(isinstance(norm, nn.LayerNorm), f"norm must be a torch.nn.LayerNorm, got {type(norm).__name__}")
    _require(
        tuple(norm.normalized_shape) == (ours.d_model,),
        f"cannot copy a LayerNorm over {tuple(norm.normalized_shape)} into one over the last axis of size {ours.d_model}",
    )
    _require(
        norm.weight is not None and norm.bias is not None,
        "cannot copy a torch LayerNorm without a learned scale and shift (elementwise_affine=False or "
        "bias=False): this LayerNorm always has both",
    )
    ours.gamma.copy_(norm.weight)
    ours.beta.copy_(norm.bias)
    ours.eps = norm.eps
    return ours


@torch.no_grad()
def copy_encoder_layer(ours, layer: nn.TransformerEncoderLayer):
    """``TransformerEncoderBlock.load_from_torch``: attention, feed-forward network and both LayerNorms."""
    _require(
        isinstance(layer, nn.TransformerEncoderLayer),
        f"layer must be a torch.nn.TransformerEncoderLayer, got {type(layer).__name__}",
    )
    _require(
        layer.norm_first == ours.norm_first,
        f"layer.norm_first={layer.norm_first} but this block has norm_first={ours.norm_first}",
    )
    activation = layer.activation
    _require(
        activation is nn.functional.relu or isinstance(activation, nn.ReLU),
        f"cannot copy a layer with activation {getattr(activation, '__name__', type(activation).__name__)}: "
        "this block's feed-forward network uses ReLU",
    )
    d_ff = ours.feed_forward.linear1.out_features
    _require(
        (layer.linear1.in_features, layer.linear1.out_features) == (ours.d_model, d_ff),
        f"cannot copy d_model={layer.linear1.in_features}, dim_feedforward={layer.linear1.out_features} into "
        f"a block with d_model={ours.d_model}, d_ff={d_ff}",
    )
    _require(
        layer.linear1.bias is not None and layer.linear2.bias is not None,
        "cannot copy a layer built with bias=False: this block's linear layers have biases",
    )
    _require(
        hasattr(ours.norm1, "gamma") and hasattr(ours.norm2, "gamma"),
        "cannot copy into a block without its LayerNorms (layer_norm=False): torch's layer has both",
    )
    copy_multihead(ours.self_attention, layer.self_attn)
    ours.feed_forward.linear1.load_state_dict(layer.linear1.state_dict())
    ours.feed_forward.linear2.load_state_dict(layer.linear2.state_dict())
    copy_layer_norm(ours.norm1, layer.norm1)
    copy_layer_norm(ours.norm2, layer.norm2)
    return ours


@torch.no_grad()
def copy_rnn(ours, rnn: nn.RNN):
    """``VanillaRNN.load_from_torch``: one layer, one direction, tanh, with biases and the same sizes."""
    _require(isinstance(rnn, nn.RNN), f"rnn must be a torch.nn.RNN, got {type(rnn).__name__}")
    _require(
        rnn.num_layers == 1 and not rnn.bidirectional and rnn.nonlinearity == "tanh" and rnn.bias,
        "only a one-layer, one-direction tanh nn.RNN with biases can be copied",
    )
    _require(
        (rnn.input_size, rnn.hidden_size) == (ours.input_size, ours.hidden_size) and not getattr(rnn, "proj_size", 0),
        f"cannot copy input_size={rnn.input_size}, hidden_size={rnn.hidden_size} into a VanillaRNN with "
        f"input_size={ours.input_size}, hidden_size={ours.hidden_size}",
    )
    ours.w_xh.weight.copy_(rnn.weight_ih_l0)
    ours.w_xh.bias.copy_(rnn.bias_ih_l0)
    ours.w_hh.weight.copy_(rnn.weight_hh_l0)
    ours.w_hh.bias.copy_(rnn.bias_hh_l0)
    return ours
