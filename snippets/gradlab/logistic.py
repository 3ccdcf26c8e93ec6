"""The logistic sigmoid's slope, two ways, and exact references to check them against.

gradlab's sigmoid (engine.sigmoid, ops.sigmoid) has the slope sigmoid(x) sigmoid(-x), which stays
positive until e^-|x| underflows (|x| > 745 in float64). The textbook rule written from the
output, y (1 - y), is what PyTorch (``sigmoid_backward(grad, result)`` in
tools/autograd/derivatives.yaml) and JAX (the JVP of ``logistic_p`` in jax/_src/lax/lax.py) use;
it returns exactly 0 once y has rounded to 1.0. `sigmoid_output_rule` is that program, for
demonstrations. The references use decimal arithmetic, so they do not depend on the machine's libm.
"""

from decimal import Decimal, localcontext

import numpy as np

from . import engine, forward, numerical, ops


def sigmoid_output_rule(x):
    """ops.sigmoid(x) whose reverse- and forward-mode derivative is written y (1 - y) from the
    output y. On plain arrays (central differences, complex step) it is ops.sigmoid itself."""
    if isinstance(x, engine.Tensor):
        return x._unary("sigmoid, y(1-y)", ops.sigmoid(x.data), lambda x, y: y * (1 - y))
    if isinstance(x, forward.Dual):
        y = ops.sigmoid(x.val)
        return x._make(y, y * (1 - y) * x.tan)
    return ops.sigmoid(x)


def reference(z, digits=50):
    """1 / (1 + e^-z) for the float z, in `digits`-digit decimal arithmetic, rounded once."""
    with localcontext() as context:
        context.prec = digits
        return float(1 / (1 + (-Decimal(float(z))).exp()))


def reference_slope(z, digits=50):
    """sigma'(z) = e^-|z| / (1 + e^-|z|)^2 for the float z, in `digits`-digit decimal arithmetic."""
    with localcontext() as context:
        context.prec = digits
        e = (-abs(Decimal(float(z)))).exp()
        return float(e / (1 + e) ** 2)


def first_float_at_or_above(bits, dtype=np.float64, digits=50):
    """The smallest `dtype` number >= bits * ln 2, found exactly (no libm involved).

    With p = 53 (float64) or 24 (float32) it is where 1 / (1 + e^-z), each operation correctly
    rounded, becomes exactly 1.0: 1 + e^-z rounds to 1 once e^-z <= 2^-p (a tie goes to the even
    1). With p = 1075 it is where e^-z in float64 drops to half the smallest subnormal and
    rounds to 0."""
    with localcontext() as context:
        context.prec = digits
        exact = bits * Decimal(2).ln()
        first = dtype(float(exact))
        return first if Decimal(float(first)) >= exact else np.nextafter(first, dtype(np.inf))


def machine_rounds_to_one(dtype=np.float64):
    """The smallest `dtype` z >= 1 at which ops.sigmoid(z), on THIS machine's exp, is exactly 1.0
    (bisecting the bit patterns; the sigmoid is monotone). Compare it with first_float_at_or_above."""
    ints = np.dtype(dtype).str.replace("f", "i")
    below, above = int(np.array(1, dtype).view(ints)), int(np.array(100, dtype).view(ints))
    while above - below > 1:
        middle = (below + above) // 2
        if ops.sigmoid(np.array(middle, ints).view(dtype)) == 1.0:
            above = middle
        else:
            below = middle
    return np.array(above, ints).view(dtype)[()]


def floats_from(a, b):
    """How many floats of a's dtype lie from a to b (negative if b < a); both non-negative."""
    ints = a.dtype.str.replace("f", "i")
    return int(np.array(b, a.dtype).view(ints)) - int(np.array(a).view(ints))


def slope_by_methods(z):
    """sigma'(z) by five programs/methods, as a dict: the rule y (1 - y) in reverse and in forward
    mode ("reverse_rule", "forward_rule"), central differences, the complex step, gradlab's reverse
    mode ("reverse_gradlab"), and the decimal reference ("true")."""
    point, rule = [np.array([float(z)])], lambda p: ops.sum(sigmoid_output_rule(p[0]))
    function = lambda p: ops.sum(ops.sigmoid(p[0]))  # noqa: E731
    methods = {
        "reverse_rule": engine.grad(rule, point),
        "forward_rule": forward.grad(rule, point),
        "central": numerical.central_difference(function, point),
        "complex": numerical.complex_step(function, point),
        "reverse_gradlab": engine.grad(function, point),
    }
    return {key: float(grads[0][0]) for key, grads in methods.items()} | {"true": reference_slope(z)}


def correctly_rounded(z, bits=53, dtype=np.float64):
    """What a correctly rounded sigma (one rounding of the exact value) does near 1, as a dict.

    1 - sigma(z) = sigma(-z) ~ e^-z, and 1.0 is the nearest float once sigma(-z) <= 2^-(p+1) (half an
    ulp below 1; a tie goes to the even 1.0): from about (p + 1) ln 2, one ln 2 later than the
    formula 1 / (1 + e^-z) rounded twice. "one_minus": 1 - sigma(z); "rule_slope": y (1 - y) from that
    y; "z_one": the first float >= (p + 1) ln 2; "threshold_holds": sigma is 1.0 there and not one float
    below; "flat_under_step": sigma(z -+ h) is sigma(z) for the central-difference step h, so any
    central difference of any correctly rounded sigma at z is 0 there: floating point's zero."""
    y, z_one = reference(z), first_float_at_or_above(bits + 1, dtype)
    h = float(z) * float(np.finfo(dtype).eps) ** (1 / 3)
    return {
        "one_minus": 1 - y,
        "rule_slope": y * (1 - y),
        "z_one": z_one,
        "threshold_holds": reference(z_one) == 1.0 > reference(np.nextafter(z_one, dtype(0))),
        "flat_under_step": reference(z - h) == y == reference(z + h),
    }
