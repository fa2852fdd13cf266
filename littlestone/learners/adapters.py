"""Adapters: a River binary classifier or a scikit-learn ``partial_fit`` classifier as a
learner of the mistake-bound game.

``river:MODULE.CLASS`` (``river:linear_model.Perceptron``) and ``sklearn:MODULE.CLASS``
(``sklearn:linear_model.SGDClassifier``) build the estimator with its defaults. The
instance's feature vector (the class's ``encode``) is given to River as a dict
``{i: x_i}`` and to scikit-learn as a 1 x n array. River's ``predict_proba_one`` and
scikit-learn's ``predict_proba`` give p when the model has them; otherwise the model's
0/1 prediction is p. Both libraries are optional (the ``adapters`` extra, also in ``dev``).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners.base import Learner, register


def _load(library: str, package: str, model: str) -> Any:
    """The estimator class ``package.model`` (``model`` is ``module.Class``)."""
    module_name, _, class_name = model.rpartition(".")
    if not module_name or not class_name:
        raise SpecError(f"{library}: name the model as MODULE.CLASS, e.g. "
                        f"{library}:linear_model.Perceptron")
    try:
        module = importlib.import_module(f"{package}.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == package:
            raise SpecError(f"{library}: the {package!r} package is not installed "
                            f"(pip install 'littlestone[adapters]')") from None
        raise SpecError(f"{library}: no module {package}.{module_name}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise SpecError(f"{library}: {package}.{module_name} has no class {class_name!r}")
    return cls


class _Adapter(Learner):
    games = frozenset({MISTAKE_BOUND})
    deterministic = False
    #: A spec ``ID:MODULE.CLASS`` names this parameter without ``model=``.
    positional = "model"
    served = False  # it imports a module named by its spec

    def __init__(self, model: str = "linear_model.Perceptron") -> None:
        self.model = model
        self._estimator_class = self._load_class(model)
        self._estimator: Any = None
        self._encode: Any = None

    def _load_class(self, model: str) -> Any:
        raise NotImplementedError

    def unsupported(self, game: GameSpec) -> str | None:
        if game.hclass is None:
            return "it needs a class to encode instances"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        self._encode = game.hclass.encode
        self._estimator = self._estimator_class()


@register
class RiverLearner(_Adapter):
    """A River binary classifier: ``learn_one`` and ``predict_proba_one`` (or
    ``predict_one``) on the instance's features as a dict.

    >>> RiverLearner.positional
    'model'
    """

    id = "river"

    def _load_class(self, model: str) -> Any:
        return _load("river", "river", model)

    def _features(self, x: Any) -> dict[int, float]:
        return dict(enumerate(self._encode(x).tolist()))

    def predict(self, x: Any) -> float:
        features = self._features(x)
        if hasattr(self._estimator, "predict_proba_one"):
            proba = self._estimator.predict_proba_one(features)
            if proba:
                return float(min(1.0, max(0.0, proba.get(True, proba.get(1, 0.0)))))
        return float(bool(self._estimator.predict_one(features)))

    def update(self, x: Any, y: int) -> None:
        self._estimator.learn_one(self._features(x), bool(y))


@register
class SklearnLearner(_Adapter):
    """A scikit-learn classifier with ``partial_fit``, one instance at a time; p from
    ``predict_proba`` when it has one, else from ``predict``; 0.5 before the first fit.

    >>> SklearnLearner.positional
    'model'
    """

    id = "sklearn"

    def _load_class(self, model: str) -> Any:
        cls = _load("sklearn", "sklearn", model)
        if not hasattr(cls, "partial_fit"):
            raise SpecError(f"sklearn: {model} has no partial_fit")
        return cls

    def reset(self, game: GameSpec, seed: int) -> None:
        super().reset(game, seed)
        if "random_state" in self._estimator.get_params():
            self._estimator.set_params(random_state=seed % 2**32)
        self._fitted = False

    def predict(self, x: Any) -> float:
        if not self._fitted:
            return 0.5
        z = self._encode(x).reshape(1, -1)
        if hasattr(self._estimator, "predict_proba"):
            try:
                return float(np.clip(self._estimator.predict_proba(z)[0, 1], 0.0, 1.0))
            except AttributeError:  # e.g. SGDClassifier with a loss that has no proba
                pass
        return float(self._estimator.predict(z)[0])

    def update(self, x: Any, y: int) -> None:
        z = self._encode(x).reshape(1, -1)
        self._estimator.partial_fit(z, np.array([y]), classes=np.array([0, 1]))
        self._fitted = True
