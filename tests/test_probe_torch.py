"""snippets/frameworks/probe_torch.py: each deliberately broken run gets its symptom, a healthy
run gets none, and the caller's model (parameters, gradients, buffers), optimizer and global RNG
are left as they were: the next step equals the step of a twin copied before the probe ran."""

import copy
import sys

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")
sys.path.insert(0, str(ROOT / "snippets" / "frameworks"))
import probe_torch  # noqa: E402
from torch import nn  # noqa: E402
from torch_cases import CopyingSGD  # noqa: E402  (the 2024 MPS bug's mechanism, as the page runs it)

torch.set_num_threads(1)


def data(seed=0, n=64, inputs=8):
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(n, inputs, generator=generator)
    return X, torch.sin(X.sum(dim=1, keepdim=True))


def mlp(depth=3, width=32, activation=nn.ReLU, inputs=8, seed=0):
    torch.manual_seed(seed)
    layers, size = [], inputs
    for _ in range(depth):
        layers += [nn.Linear(size, width), activation()]
        size = width
    return nn.Sequential(*layers, nn.Linear(size, 1))


def twin_of(model, optimizer, make_optimizer):
    """A copy of the model and its optimizer that shares no tensor with them."""
    twin = copy.deepcopy(model)
    twin_optimizer = make_optimizer(twin.parameters())
    twin_optimizer.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    return twin, twin_optimizer


def symptoms(rows):
    return {symptom for _, symptom in probe_torch.flags(rows)}


def test_a_healthy_run_is_flagged_with_nothing():
    model, (X, y) = mlp(), data()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    rows = probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer)
    assert probe_torch.flags(rows) == []
    assert {r["module"] for r in rows if r["kind"] == "activation"} == {"ReLU"}
    assert all(r["update_ratio"] > 0 for r in rows if r["kind"] == "parameter")


def test_the_callers_model_gradients_and_optimizer_are_unchanged():
    model, (X, y) = mlp(), data()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    nn.MSELoss()(model(X), y).backward()
    before = [p.detach().clone() for p in model.parameters()]
    grads = [p.grad.clone() for p in model.parameters()]
    probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, model.parameters(), strict=True))
    assert optimizer.state_dict()["state"] == {}, "Adam has taken no step of its own"


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda params: torch.optim.Adam(params, lr=1e-2),
        lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9),
    ],
    ids=["Adam", "SGD with momentum"],
)
def test_an_optimizer_with_state_keeps_it_after_the_probe(make_optimizer):
    """Mid-training: the probe's step updates step, exp_avg, exp_avg_sq (or the momentum buffer) in
    place, so the undo must restore a copy of the state, not the live tensors state_dict() holds."""
    model, (X, y) = mlp(), data()
    optimizer = make_optimizer(model.parameters())
    for _ in range(3):
        optimizer.zero_grad()
        nn.MSELoss()(model(X), y).backward()
        optimizer.step()
    state = {
        index: {key: value.clone() for key, value in entry.items()}
        for index, entry in optimizer.state_dict()["state"].items()
    }
    twin, twin_optimizer = twin_of(model, optimizer, make_optimizer)  # never sees the probe
    assert state, "the optimizer has state to lose"
    before = [p.detach().clone() for p in model.parameters()]
    probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer)
    after = optimizer.state_dict()["state"]
    assert after.keys() == state.keys()
    for index, entry in state.items():
        assert after[index].keys() == entry.keys()
        for key, value in entry.items():
            assert torch.equal(after[index][key], value), (index, key)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    # and the next step is the step the unprobed twin takes
    for m, opt in ((model, optimizer), (twin, twin_optimizer)):
        opt.zero_grad()
        nn.MSELoss()(m(X), y).backward()
        opt.step()
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters(), strict=True))


def test_batch_norm_statistics_and_the_dropout_rng_are_restored():
    """In training mode the probe's forward pass updates BatchNorm's running_mean, running_var and
    num_batches_tracked and draws a dropout mask from the global RNG: all must be put back."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))
    X, y = data()
    make_optimizer = lambda params: torch.optim.Adam(params, lr=1e-2)  # noqa: E731
    optimizer = make_optimizer(model.parameters())
    for _ in range(2):
        optimizer.zero_grad()
        nn.MSELoss()(model(X), y).backward()
        optimizer.step()
    buffers = {name: b.clone() for name, b in model.named_buffers()}
    assert {"1.running_mean", "1.running_var", "1.num_batches_tracked"} <= buffers.keys()
    twin, twin_optimizer = twin_of(model, optimizer, make_optimizer)
    rng = torch.get_rng_state()
    probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer)
    assert all(torch.equal(buffers[name], b) for name, b in model.named_buffers())
    assert torch.equal(torch.get_rng_state(), rng)
    for m, opt in ((model, optimizer), (twin, twin_optimizer)):
        torch.set_rng_state(rng)  # both steps draw the same dropout mask
        opt.zero_grad()
        nn.MSELoss()(m(X), y).backward()
        opt.step()
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in zip(model.buffers(), twin.buffers(), strict=True))


def test_dead_biases_are_flagged_dead():
    model, (X, y) = mlp(), data()
    with torch.no_grad():
        model[0].bias.fill_(-10.0)  # every first-layer unit negative on every input
    rows = probe_torch.layer_report(model, nn.MSELoss(), X, y)
    assert ("1", "dead") in probe_torch.flags(rows)
    first = next(r for r in rows if r["name"] == "1")
    assert first["dead_fraction"] == 1.0


def test_a_deep_sigmoid_stack_is_flagged_saturated_or_vanishing():
    model, (X, y) = mlp(depth=12, activation=nn.Sigmoid), data()
    rows = probe_torch.layer_report(model, nn.MSELoss(), X, y)
    flagged = dict(probe_torch.flags(rows))
    assert flagged.get("0.weight") == "vanishing", flagged


def test_a_learning_rate_that_overflows_is_flagged_nan():
    model, (X, y) = mlp(), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e4)
    for _ in range(20):  # diverges to inf, then NaN
        optimizer.zero_grad()
        nn.MSELoss()(model(X), y).backward()
        optimizer.step()
    assert "nan" in symptoms(probe_torch.layer_report(model, nn.MSELoss(), X, y))


def test_a_parameter_the_optimizer_skips_is_flagged_frozen():
    model, (X, y) = mlp(), data()
    skipped = {id(model[0].weight)}
    optimizer = torch.optim.SGD([p for p in model.parameters() if id(p) not in skipped], lr=0.1)
    flagged = probe_torch.flags(probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer))
    assert flagged == [("0.weight", "frozen")]


def test_a_non_contiguous_parameter_updated_through_a_copy_is_flagged_frozen():
    model, (X, y) = mlp(), data()
    model[0].weight = nn.Parameter(model[0].weight.detach().t().contiguous().t())  # a transposed view
    assert not model[0].weight.is_contiguous()
    optimizer = CopyingSGD(model.parameters(), lr=0.1)
    flagged = probe_torch.flags(probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer))
    assert flagged == [("0.weight", "frozen")]


def test_exploding_gradients_are_flagged():
    model, (X, y) = mlp(), data()
    with torch.no_grad():
        model[-1].weight.mul_(1e6)  # the output layer amplifies every earlier gradient
    assert "exploding" in symptoms(probe_torch.layer_report(model, nn.MSELoss(), X, y * 1e6))


def test_print_report_is_one_aligned_line_per_row(capsys):
    model, (X, y) = mlp(depth=2), data()
    rows = probe_torch.layer_report(model, nn.MSELoss(), X, y, torch.optim.SGD(model.parameters(), lr=0.1))
    probe_torch.print_report(rows)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(rows)
    assert len({line.index("grad") for line in lines if " grad " in line}) == 1
