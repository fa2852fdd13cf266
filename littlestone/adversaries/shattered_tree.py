"""The shattered-tree adversary: the lower bound of UML Lemma 21.6, played."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from littlestone.adversaries.base import Adversary, register
from littlestone.games.classes import FiniteClass
from littlestone.games.errors import SpecError, UnsupportedGame
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import (
    LDIM_BUDGET,
    LdimSolver,
    solver_within_budget,
    too_large,
    verify_shattered,
)

if TYPE_CHECKING:  # networkx is imported for a tree file or a played tree only: its import
    import networkx as nx  # costs a sandboxed game's process 80 ms of CPU


@register
class ShatteredTree(Adversary):
    """Walks down a shattered tree, labelling every instance against the learner.

    Each round it presents an instance that splits the version space V optimally
    (Ldim(V) = 1 + min(Ldim(V0), Ldim(V1)), from the class's shared Ldim cache, the one
    SOA uses) and labels it against the learner's likelier prediction (0 when p >= 1/2),
    which keeps Ldim(V) >= Ldim(H) - t. A deterministic learner errs every round until the
    tree is spent, so it makes at least Ldim(H) mistakes; a randomised one at least
    Ldim(H)/2 in expectation (UML Lemma 21.6). SOA makes exactly Ldim(H). The version
    space never empties. Once the tree is spent (Ldim(V) = 0) it plays random instances,
    labelled as every hypothesis left agrees.

    ``tree=FILE.graphml`` plays a fixed tree, as ``littlestone ldim --tree`` writes it
    (checked to be shattered for the class). :meth:`played_tree` is the path it played.

    >>> from littlestone.games.classes import make_class
    >>> adversary = ShatteredTree()
    >>> adversary.start(GameSpec("mistake-bound", 3, make_class("thresholds:n=7")), seed=0)
    >>> x = adversary.instance(); x, adversary.label(x, 1.0), adversary.label_against(0.0)
    (3, 0, 1)
    """

    id = "shattered-tree"
    file_params = frozenset({"tree"})
    slow_moves = True  # each split is an exact-Ldim question
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, tree: str | None = None, budget: int = LDIM_BUDGET) -> None:
        self.tree = tree
        self.budget = budget
        self._fixed: nx.DiGraph | None = None
        if tree is not None:
            import networkx as nx

            try:
                self._fixed = nx.read_graphml(tree)
            except (OSError, ValueError, SyntaxError) as exc:
                raise SpecError(f"shattered-tree: cannot read tree {tree!r}: {exc}") from None
            except Exception as exc:  # the XML parser's own errors
                raise SpecError(f"shattered-tree: cannot read tree {tree!r}: "
                                f"{type(exc).__name__}") from None
        self._solver: LdimSolver | None = None
        self._hclass: FiniteClass | None = None
        self._v = 0
        self._node = "t"
        #: The path played so far: (node, its instance, the label given), in order.
        self._path: list[tuple[str, int, int]] = []
        self._rng = np.random.default_rng(0)

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class to build a shattered tree for"
        return too_large(game.hclass) or super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._hclass = game.hclass
        self._solver, self.ldim = solver_within_budget(game.hclass, self.budget,
                                                       "shattered-tree")
        if self._fixed is not None and not _is_tree_for(self._fixed, game.hclass,
                                                          self._solver):
            raise UnsupportedGame(f"shattered-tree: {self.tree} is not a shattered tree "
                                  f"of {game.hclass.spec}")
        self._v = self._solver.full
        self._node = "t"
        self._path = []
        self._rng = np.random.default_rng(seed)

    def _spent(self) -> bool:
        assert self._solver is not None
        if self._fixed is not None:
            return "instance" not in self._fixed.nodes.get(self._node, {})
        return self._solver.ldim(self._v, self.budget) == 0

    def instance(self) -> int:
        assert self._solver is not None and self._hclass is not None, "start() first"
        if self._spent():
            return int(self._rng.integers(self._hclass.domain_size))
        if self._fixed is not None:
            return int(self._fixed.nodes[self._node]["instance"])
        x, _, _ = self._solver.best_split(self._v, self.budget)
        return x

    @staticmethod
    def label_against(p: float) -> int:
        """The label opposite to the likelier prediction: 0 when p >= 1/2, else 1."""
        return 0 if p >= 0.5 else 1

    def label(self, x: Any, p: float) -> int:
        assert self._solver is not None, "start() first"
        sides = self._solver.split(self._v, x)
        y = self.label_against(p)
        if not sides[y]:  # only one label keeps the game realizable
            y = 1 - y
        if not self._spent():
            self._path.append((self._node, int(x), y))
            self._node += str(y)
        self._v = sides[y]
        return y

    def played_tree(self) -> nx.DiGraph:
        """The path played down the tree: nodes carry instances, edges labels, and the
        last node a hypothesis that realises the path."""
        import networkx as nx

        tree = nx.DiGraph(**({} if self._hclass is None else {"class": self._hclass.spec}))
        for node, x, y in self._path:
            tree.add_node(node, instance=x)
            tree.add_edge(node, node + str(y), label=y)
        witness = (self._v & -self._v).bit_length() - 1
        tree.add_node(self._node, hypothesis=witness)
        return tree


def _is_tree_for(tree: nx.DiGraph, hclass: FiniteClass, solver: Any = None) -> bool:
    """A tree file fits the class: instances in the domain, and shattered: every
    root-to-leaf path's labels are those of some hypothesis of the class (not
    necessarily the one the leaf names: a tree of ``intervals:n=12`` is a shattered tree
    of ``intervals:n=13``, whose hypotheses are numbered otherwise)."""
    try:
        for _, data in tree.nodes(data=True):
            if "instance" in data:
                hclass.check_instance(int(data["instance"]))
        if "t" not in tree:
            return False
        if solver is None:
            return verify_shattered(tree, hclass)
        full = solver.full
        for leaf in (n for n in tree.nodes if tree.out_degree(n) == 0):
            v = full
            for depth in range(len(leaf) - 1):
                node, label = leaf[: depth + 1], leaf[depth + 1]
                column = solver.columns[int(tree.nodes[node]["instance"])]
                v &= column if label == "1" else full ^ column
            if not v:
                return False
        return True
    except (ValueError, KeyError, TypeError, IndexError):
        return False
