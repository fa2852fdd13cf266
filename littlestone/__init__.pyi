# The public names of littlestone, for type checkers: __init__.py imports each on first
# use (PEP 562), and tests/littlestone/test_public_api.py holds the two lists equal.
from littlestone.adversaries import ADVERSARIES as ADVERSARIES
from littlestone.adversaries import Adversary as Adversary
from littlestone.api import compare as compare
from littlestone.api import connect as connect
from littlestone.api import ldim as ldim
from littlestone.api import play as play
from littlestone.api import replay as replay
from littlestone.api import tournament as tournament
from littlestone.games.classes import FiniteClass as FiniteClass
from littlestone.games.classes import make_class as make_class
from littlestone.games.errors import ArgumentError as ArgumentError
from littlestone.games.errors import LittlestoneError as LittlestoneError
from littlestone.games.game import GameResult as GameResult
from littlestone.games.game import GameSpec as GameSpec
from littlestone.learners import LEARNERS as LEARNERS
from littlestone.learners import Learner as Learner
from littlestone.results import Game as Game
from littlestone.sweeps import sweep as sweep

__all__: list[str]
__version__: str

def __getattr__(name: str) -> object: ...
def __dir__() -> list[str]: ...
