"""A plain Python rotate in torch, for callables.py (docs/adapters.md, "Plain Python callables")."""
import torch

DECLARATION = {
    "contract": 1,
    "ops": {"rotate": {"dtypes": ["fp16", "bf16"]}},
    "build_info": "rotate_callables.py, the worked example of docs/adapters.md",
}


def fwht(x, block):
    """The normalised Walsh-Hadamard transform of every block of the last dim, in float32, stage
    by stage (h = 1, 2, 4, ...: a, b -> a + b, a - b), then times 1/sqrt(block) (docs/format.md §3)."""
    n = x.shape[-1]
    h = 1
    while h < block:
        y = x.reshape(-1, n // (2 * h), 2, h)  # [..., pair group, bit h of the index, low bits]
        a, b = y[:, :, 0, :], y[:, :, 1, :]
        x = torch.stack((a + b, a - b), dim=2).reshape(x.shape)
        h *= 2
    return x * (1.0 / block ** 0.5)


def rotate(x, signs, k_layout, inverse):
    """x [T, H, 256] fp16/bf16 in place: forward H(D x), inverse D H(x), D = diag(-1 where bit i of
    signs[i // 32] is set); 64-dim blocks with k_layout, else one 256-dim transform."""
    block = 64 if k_layout else 256
    bits = (signs.view(8, 1) >> torch.arange(32, dtype=torch.int32, device=signs.device)) & 1
    d = 1.0 - 2.0 * bits.reshape(256).to(torch.float32)
    y = x.to(torch.float32)
    y = fwht(y, block) * d if inverse else fwht(y * d, block)
    x.copy_(y.to(x.dtype))
    return "portable"
