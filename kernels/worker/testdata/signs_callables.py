"""A rotate for callables.py that misuses its sign tensor by the number of tokens it is given, to
show that the worker's sidecar catches it: 1 token, it changes signs; 2 tokens, it writes the
int32 after signs's 8; otherwise it leaves signs alone (and x too)."""
import torch

DECLARATION = {"contract": 1, "ops": {"rotate": {}}}


def rotate(x, signs, k_layout, inverse):
    if x.shape[0] == 1:
        signs.add_(1)
    elif x.shape[0] == 2:
        torch.as_strided(signs, (9,), (1,))[8:].fill_(7)
