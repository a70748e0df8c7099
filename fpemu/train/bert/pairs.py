"""The built-in sentence pairs of ``fpemu infer --model minilm`` (data, written for fpemu): 12
paraphrases, 10 near misses (the same words with another meaning: negation, swapped roles,
another number or place) and 10 unrelated pairs, from four words to about forty.

>>> len(PAIRS), sorted({kind for kind, _, _ in PAIRS})
(32, ['near miss', 'paraphrase', 'unrelated'])
"""

from __future__ import annotations

__all__ = ["PAIRS", "KINDS", "first_pairs"]

KINDS = ("paraphrase", "near miss", "unrelated")

PAIRS: tuple[tuple[str, str, str], ...] = (
    ("paraphrase", "A man is playing a guitar.", "Someone is strumming a guitar."),
    ("paraphrase", "The train to Berlin was delayed by two hours.", "Our Berlin train arrived two hours late."),
    ("paraphrase", "How do I reset my password?", "What are the steps to change a forgotten password?"),
    ("paraphrase", "The children built a sandcastle on the beach.", "On the beach, the kids made a castle out of sand."),
    ("paraphrase", "She finished the marathon in under four hours.", "Her marathon time was less than four hours."),
    ("paraphrase", "Heavy rain flooded several streets in the old town overnight, and the fire brigade pumped "
     "water out of cellars until morning.", "Overnight downpours left parts of the historic centre under water; "
     "firefighters spent the night draining basements."),
    ("paraphrase", "Cheap flights sell out fast.", "Low-cost plane tickets go quickly."),
    ("paraphrase", "The committee postponed its decision until next month.", "The panel delayed the ruling by a month."),
    ("paraphrase", "Water boils at a lower temperature at high altitude.", "At high elevations, water comes to a boil "
     "at a lower temperature."),
    ("paraphrase", "A dog is chasing a ball across the park.", "A puppy runs after a ball in the park."),
    ("paraphrase", "The software update fixed the battery drain on older phones, although some users still report "
     "that the screen freezes after a restart.", "Older phones no longer lose battery quickly since the update, but "
     "a few people say their screens still lock up when they reboot."),
    ("paraphrase", "Please close the window.", "Could you shut the window?"),
    ("near miss", "The cat chased the mouse.", "The mouse chased the cat."),
    ("near miss", "I love this restaurant.", "I do not love this restaurant."),
    ("near miss", "The meeting starts at 9 am on Monday.", "The meeting starts at 9 pm on Friday."),
    ("near miss", "Paris is the capital of France.", "Berlin is the capital of Germany."),
    ("near miss", "The bank raised interest rates.", "We sat on the river bank all afternoon."),
    ("near miss", "Add two cups of sugar to the dough.", "Add two cups of salt to the dough."),
    ("near miss", "The patient's fever went down after the treatment, so the doctors sent him home on Tuesday.",
     "The patient's fever went up after the treatment, so the doctors kept him in hospital on Tuesday."),
    ("near miss", "He sold his car to his brother.", "His brother sold him a car."),
    ("near miss", "The museum is open every day except Monday.", "The museum is closed every day except Monday."),
    ("near miss", "A woman is slicing an onion.", "A woman is slicing a tomato."),
    ("unrelated", "The stock market fell sharply today.", "My grandmother knits warm socks every winter."),
    ("unrelated", "Photosynthesis converts light into chemical energy.", "The referee showed him a red card."),
    ("unrelated", "Where is the nearest train station?", "Quantum computers use qubits."),
    ("unrelated", "The violinist tuned her instrument before the concert began, while the audience slowly found "
     "their seats.", "Volcanic soil is rich in minerals, which is why vineyards often grow on the slopes of "
     "extinct volcanoes."),
    ("unrelated", "Bake for twenty minutes.", "The treaty was signed in 1648."),
    ("unrelated", "Penguins cannot fly.", "This laptop has sixteen gigabytes of memory."),
    ("unrelated", "The new bridge will reduce traffic in the city centre.", "She painted the fence bright yellow."),
    ("unrelated", "Our team won the chess tournament.", "Tomatoes need plenty of sunlight."),
    ("unrelated", "Mount Everest is the highest mountain above sea level.", "I forgot my umbrella at the office."),
    ("unrelated", "The algorithm sorts the list in linear time.", "Autumn leaves turn red and orange."),
)


def first_pairs(n: int) -> tuple[tuple[str, str, str], ...]:
    """The first ``n`` pairs taking the kinds in turn (a paraphrase, a near miss, an unrelated
    pair, a paraphrase ...), each kind in its own order, so that a few pairs still mix them.

    >>> [kind for kind, _, _ in first_pairs(4)]
    ['paraphrase', 'near miss', 'unrelated', 'paraphrase']
    """
    queues = [[p for p in PAIRS if p[0] == kind] for kind in KINDS]
    out: list[tuple[str, str, str]] = []
    while len(out) < min(n, len(PAIRS)):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return tuple(out)
