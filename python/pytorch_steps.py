"""The training steps of loaderbench's PyTorch runtime (pytorch_loader.py), run on
every batch once it is on the device, as loaderbench's own engine runs them:

  none          nothing: the loop measures the loader alone
  fixed(ms)     busy (not sleeping) for ms milliseconds, as a step keeps a core busy
  mlp(hidden)   the same two-layer perceptron as loaderbench's, made on the first batch,
                forward, backward and plain SGD by hand
  model         a TorchScript file (torch.jit.load): forward, cross-entropy, backward and
                torch.optim.SGD, as tch trains the same file in loaderbench's engine
  python        the user's own step: factory(**args) from their module, once, returns a
                callable called with every batch as the DataLoader yields it

build_step(request, device, user) returns a callable taking the batch, or None without
a step. `user` is pytorch_loader's helpers for the user's code (import a module, find
a function, fail naming a file), so both scripts report errors alike.
"""

import time

import torch
import torch.nn.functional as F

# As loaderbench's mlp step: the classes it predicts (labels are folded into them, since
# only the step's cost matters) and its learning rate.
MLP_CLASSES = 10
MLP_LEARNING_RATE = 0.01


def step_spec(request):
    """The request's step as loaderbench's StepSpec serializes it (`"none"`,
    `{"fixed": ms}`, `{"mlp": {"hidden": n}}`, `{"model": {"path", "lr"}}`,
    `{"python": {"path", "factory", "args"}}`): its kind and its fields."""
    step = request.get("step") or "none"
    if isinstance(step, str):
        return step, {}
    ((kind, fields),) = step.items()
    return kind, fields if isinstance(fields, dict) else {"ms": fields}


def build_step(request, device, user):
    kind, step = step_spec(request)
    if kind == "none":
        return None
    if kind == "fixed":
        return FixedStep(step["ms"] / 1e3)
    if kind == "mlp":
        return MlpStep(step["hidden"])
    if kind == "model":
        return ModelStep(step["path"], step["lr"], device, user)
    if kind == "python":
        module = user.module(step["path"])
        return user.call(module, step, "factory", step.get("args", {}), "step")
    raise ValueError(f"unknown step kind {kind}")


def images_and_labels(batch, kind):
    """The (images, labels) tensors a built-in step trains on."""
    if (
        isinstance(batch, (list, tuple))
        and len(batch) >= 2
        and all(isinstance(item, torch.Tensor) for item in batch[:2])
    ):
        return batch[0], batch[1]
    raise StepInputError(
        f"the {kind} step trains on batches of (images, labels) tensors; this dataset's "
        f"batches are {type(batch).__name__}s (use a python step for them)"
    )


class StepInputError(Exception):
    """The batches do not fit the step the preset names (bad input)."""


class FixedStep:
    def __init__(self, seconds):
        self.seconds = seconds

    def __call__(self, batch):
        started = time.perf_counter()
        while time.perf_counter() - started < self.seconds:
            pass


class MlpStep:
    """Two linear layers with a ReLU between them (flattened image -> hidden -> 10)."""

    def __init__(self, hidden):
        self.hidden = hidden
        self.parameters = None

    def make(self, features, device):
        def layer(inputs, outputs):
            scale = 1.0 / inputs**0.5
            weight = (torch.randn(inputs, outputs, device=device) * scale).requires_grad_(True)
            return [weight, torch.zeros(outputs, device=device, requires_grad=True)]

        return layer(features, self.hidden) + layer(self.hidden, MLP_CLASSES)

    def __call__(self, batch):
        images, labels = images_and_labels(batch, "mlp")
        inputs = images.float().flatten(1)
        if self.parameters is None:
            self.parameters = self.make(inputs.shape[1], inputs.device)
        w1, b1, w2, b2 = self.parameters
        logits = torch.relu(inputs @ w1 + b1) @ w2 + b2
        targets = labels.to(logits.device).long().remainder(MLP_CLASSES)
        loss = F.nll_loss(torch.log_softmax(logits, -1), targets)
        gradients = torch.autograd.grad(loss, self.parameters)
        with torch.no_grad():
            for parameter, gradient in zip(self.parameters, gradients):
                parameter.sub_(gradient * MLP_LEARNING_RATE)
        # Reading the loss waits for the device, so the step's time is all spent here.
        loss.item()


class ModelStep:
    """A TorchScript model trained on every batch; its errors name the model's file."""

    def __init__(self, path, lr, device, user):
        self.path = path
        self.user = user
        try:
            self.model = torch.jit.load(path, map_location=device)
        except Exception as err:
            user.fail_file(
                path,
                f"not a TorchScript model ({one_line(err)}); save one with "
                "torch.jit.script(model).save(path)",
            )
        self.model.train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def __call__(self, batch):
        images, labels = images_and_labels(batch, "model")
        try:
            if not images.is_floating_point():
                images = images.float()
            logits = self.model(images)
            # Labels are folded into the model's classes, as loaderbench's engine does.
            targets = labels.to(logits.device).long().remainder(max(logits.shape[-1], 1))
            loss = F.cross_entropy(logits, targets)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            loss.item()
        except Exception as err:
            self.user.fail_file(self.path, f"the model failed: {one_line(err)}")


def one_line(err):
    """The line of an error that says what went wrong: TorchScript's own exception line
    (`RuntimeError: ...`) where its message has one, else `Type: first line`."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in reversed(lines):
        name, _, rest = line.partition(": ")
        if rest and name.endswith("Error") and name.replace(".", "").isalnum():
            return line
    return f"{type(err).__name__}: {lines[0] if lines else ''}"
