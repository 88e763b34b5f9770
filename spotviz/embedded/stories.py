"""Compositional word problems: stories chained from a small inventory of one-line steps.

`wordproblems.py` writes each problem from one of a few dozen fixed stories, so a model trained on it learns the
stories, not the steps: asked a held-out family ("Ella has 9 clips. Omar has 27 more. How many do they have
together?") it writes the one known story that starts the same way and stops. Here a problem is a *chain of steps*
drawn from an inventory, each step one solution line with one computed operation:

    kind      what the question says                                  the solution line
    more      B has y more than A                                     Omar has 9 + 27 = 36 clips.
    fewer     B has y fewer / less than A                             Omar has 40 - 6 = 34 clips.
    times     B has k times as many as A                              Omar has 9 x 3 = 27 clips.
    part      B has half / a third / a quarter as many as A           Omar has 36 / 4 = 9 clips.
    together  how many do A and B have together / in all              Together they have 9 + 36 = 45 clips.
    diff      how many more does B have than A (last step only)       Omar has 36 - 9 = 27 more clips than Ella.
    rate      rate x count: per hour, per day, per week, price x quantity
                                                                      In 4 hours Ella collects 9 x 4 = 36 clips.
    spend     gives away / loses / spends (-)                         She has $51 - $18 = $33 left.
    gain      finds / gets / earns more (+)                           He has 36 + 5 = 41 clips now.
    share     shares equally among n / into n boxes (exact /)         Each friend gets 36 / 4 = 9 clips.

A story opens with one person's amount (things owned, money owned, things collected per hour or day, money earned
per day or week, or a shop price) and applies 2 to 4 steps, each to the result of the step before (a `together` or
`diff` right after a relation combines the two people of that relation), and asks for the last result. The
solution is one line per step in order, then ``The answer is N.``, the way `wordproblems.make_problem` writes it.
Numbers stay small as there (operands mostly below 100, every result below 1000, divisions exact, nothing
negative), and a draw is deterministic in its seed (`random.Random`), like `wordproblems.generate`.

**Signature.** A story's signature is the tuple of its step kinds in solution order, one kind per solution line
(``("more", "together")``); the problem's family is ``"story:" + "+".join(signature)`` (``story:more+together``).
Training thus meets dozens of distinct signatures, so that what it can learn is the steps and how one feeds the
next, not a handful of fixed stories.

**Held-out exclusion.** Each whole family `wordproblems.HELDOUT_FAMILIES` holds out is, in this inventory, a
two-step signature (`HELDOUT_SIGNATURES`: more-then-total = more, together; two-days = times, together; wage =
rate, rate; spend-daily = rate, spend; pick-together = together, rate). A story is never drawn when any of them
occurs in its signature as a run of consecutive steps (`excluded`): not as the whole story, nor inside a longer
one, where one step would feed the other just the same. The held-out families stay unseen *combinations* of steps
that training teaches apart, as in SCAN / COGS. The sentences are this module's own: none is a phrasing sentence
of a held-out family (tests/test_wordproblems.py checks both on 20,000 stories).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .wordproblems import CONTAINERS, DAYS, FRACTIONS, GOODS, ITEMS, PEOPLE, TIMES, Draw, Problem  # the vocabulary

KINDS = ("more", "fewer", "times", "part", "together", "diff", "rate", "spend", "gain", "share")
HELDOUT_SIGNATURES: dict[str, tuple[str, ...]] = {
    "more-then-total": ("more", "together"),
    "two-days": ("times", "together"),
    "wage": ("rate", "rate"),
    "spend-daily": ("rate", "spend"),
    "pick-together": ("together", "rate"),
}
FAMILY_PREFIX = "story:"
LENGTHS = (2, 2, 2, 3, 3, 3, 4)  # steps per story, drawn uniformly from this list
RELATIONS = ("more", "fewer", "times", "part")
MAX_RESULT = 999


def excluded(sig: tuple[str, ...]) -> bool:
    """Whether a held-out signature occurs in `sig` as a run of consecutive steps."""
    for held in HELDOUT_SIGNATURES.values():
        k = len(held)
        if any(tuple(sig[i:i + k]) == held for i in range(len(sig) - k + 1)):
            return True
    return False


def family_name(sig: tuple[str, ...]) -> str:
    return FAMILY_PREFIX + "+".join(sig)


def signature(p: Problem) -> tuple[str, ...]:
    """The step kinds of a story problem (from its family name); () for any other problem."""
    if not p.family.startswith(FAMILY_PREFIX):
        return ()
    return tuple(p.family[len(FAMILY_PREFIX):].split("+"))




def _base_form(verb: str) -> str:
    """present tense, third person singular -> base form (also the plural): has -> have, finds -> find."""
    return "have" if verb == "has" else verb[:-1]

# (per phrase, unit) of the rate frames
PER_ITEMS = ((" each hour", "hour"), (" an hour", "hour"), (" each day", "day"), (" a day", "day"))
PER_MONEY = ((" a day", "day"), (" each day", "day"), (" each week", "week"), (" an hour", "hour"))
COUNT_RANGE = {"hour": (2, 8), "day": (2, 7), "week": (2, 6)}


@dataclass
class _State:
    """The story so far: the current amount `q`, whose it is and what it measures."""
    rng: random.Random
    draw: Draw
    people: list  # people not yet in the story
    item: str
    items: str
    money: bool
    q: int = 0
    who: tuple | None = None  # a person (name, sub, obj, pos), or None: the group `group`
    group: str = "they"  # "they" / "each friend" when `who` is None
    verb: str = "has"
    per: str = ""  # " each hour" while `q` is a rate, else ""
    unit: str = ""
    shop: str = ""  # the good bought while `q` is a shop price
    pair: tuple | None = None  # (A, a, B, b, relation kind) right after a relation
    terminal: bool = False  # nothing may follow (a share into boxes, a shared cost)
    last_subject: str = ""
    lines: list = field(default_factory=list)
    facts: list = field(default_factory=list)

    # -- words
    def name(self, who=None) -> str:
        who = who if who is not None else self.who
        return who[0] if who else self.group

    def plural(self) -> bool:
        return self.who is None and self.group == "they"

    def conj(self, verb: str) -> str:  # the verb for the current subject
        return _base_form(verb) if self.plural() else verb

    def n(self, x: int) -> str:  # an amount in a sentence or as a result: "9 clips" / "$9"
        return f"${x}" if self.money else f"{x} {self.items}"

    def op(self, x: int) -> str:  # an operand in a solution line
        return f"${x}" if self.money else str(x)

    def how(self) -> str:
        return "How much money" if self.money else f"How many {self.items}"

    def much(self) -> str:
        return "much money" if self.money else f"many {self.items}"

    def pick(self, seq):
        return self.rng.choice(seq)

    def new_person(self):
        return self.people.pop()

    def subject(self, name: str, who=None) -> str:
        """A solution line's subject: a pronoun when the line before had the same subject."""
        if who is not None and self.last_subject == name:
            return who[1].capitalize()
        self.last_subject = name
        return _cap(name)

    def say(self, template: str, **v) -> None:
        self.facts.append(_cap(template.format(**v)))


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


# ----------------------------------------------------------------------------------------------- openings
def _open(st: _State, d: Draw) -> str:
    """Sets the frame and the first amount; returns the opening sentence."""
    a = st.who = st.new_person()
    A = a[0]
    frame = d.pick(["items", "items", "items", "money", "collect", "collect", "earn", "shop"])
    st.money = frame in ("money", "earn", "shop")
    if frame == "items":
        st.q = d.n(3, 60)
        box = d.pick(CONTAINERS)[0]
        return st.pick([f"{A} starts with {st.n(st.q)}.", f"{A} keeps {st.n(st.q)} in a {box}.",
                        f"{A} has a {box} with {st.n(st.q)} in it.",
                        f"By {d.pick(DAYS)}, {A} has saved up {st.n(st.q)}."])
    if frame == "money":
        st.q = d.n(5, 90)
        return st.pick([f"{A} has saved ${st.q}.", f"{A} starts with ${st.q}.",
                        f"{A} keeps ${st.q} in a jar.", f"There is ${st.q} in {A}'s wallet."])
    if frame == "collect":
        st.verb = d.pick(["collects", "finds", "makes"])
        st.per, st.unit = d.pick(PER_ITEMS)
        st.q = d.n(2, 25)
        return st.pick([f"{A} {st.verb} {st.n(st.q)}{st.per}.", f"Each {st.unit}, {A} {st.verb} {st.n(st.q)}."])
    if frame == "earn":
        st.verb = "earns"
        st.per, st.unit = d.pick(PER_MONEY)
        st.q = d.n(3, 30)
        return st.pick([f"{A} earns ${st.q}{st.per}.", f"{A} is paid ${st.q}{st.per}.",
                        f"Each {st.unit}, {A} earns ${st.q}."])
    s, p, lo, hi = d.pick(GOODS)
    st.shop, st.per, st.unit = p, " each", "good"
    st.q = d.n(lo, min(hi, 20))
    return st.pick([f"A {s} sells for ${st.q}.", f"Each {s} costs ${st.q}.", f"The shop sells {p} at ${st.q} each."])


# -------------------------------------------------------------------------------------------------- steps
# A step checks it applies (`ok`), draws its numbers, writes its sentence(s) and its solution line, and moves the
# state on; it returns False (state untouched) when its numbers cannot work (a division that is not exact, a
# result of 1000 or more).

def _ok(kind: str, st: _State, last: bool) -> bool:
    if st.terminal or st.shop and kind != "rate":
        return False
    if kind in RELATIONS:
        return st.who is not None
    if kind == "together":
        return st.who is not None
    if kind == "diff":
        return last and st.who is not None
    if kind == "rate":
        return bool(st.per)
    if kind in ("spend", "gain"):
        return not st.per
    if kind == "share":
        return not st.per and (st.who is not None or st.group == "they")
    raise ValueError(kind)


def _relation(kind: str, st: _State, d: Draw, last: bool) -> bool:
    a, q = st.who, st.q
    if kind == "more":
        y = d.n(2, 40)
        r, line_op = q + y, f"{st.op(q)} + {st.op(y)}"
    elif kind == "fewer":
        if q < 4:
            return False
        y = d.n(2, q - 2)
        r, line_op = q - y, f"{st.op(q)} - {st.op(y)}"
    elif kind == "times":
        ks = [k for k in (2, 2, 3, 4, 5) if q * k <= MAX_RESULT]
        if not ks:
            return False
        y = d.pick(ks)
        r, line_op = q * y, f"{st.op(q)} x {y}"
    else:
        ks = [k for k in (2, 2, 3, 4) if q % k == 0 and q // k >= 2]
        if not ks:
            return False
        y = d.pick(ks)
        r, line_op = q // y, f"{st.op(q)} / {y}"
    if r > MAX_RESULT:
        return False
    b = st.new_person()
    A, B, verb, per = a[0], b[0], st.verb, st.per
    if kind in ("more", "fewer"):
        word = "more" if kind == "more" else ("less" if st.money else d.pick(["fewer", "less"]))
        st.say(st.pick(["{B} {verb} {y} {word} than {A}{per}.", "Compared with {A}, {B} {verb} {y} {word}{per}.",
                        "{B} {verb} {y} {word} than {A} does{per}."]),
               A=A, B=B, verb=verb, y=st.n(y), word=word, per=per)
    else:
        mult = TIMES[y] if kind == "times" else FRACTIONS[y]
        st.say(st.pick(["{B} {verb} {mult} as {much} as {A}{per}.", "{B} {verb} {mult} as {much} as {A} does{per}.",
                        "Compared with {A}, {B} {verb} {mult} as {much}{per}."]),
               A=A, B=B, verb=verb, mult=mult, much=st.much(), per=per)
    st.lines.append(f"{st.subject(B, b)} {verb} {line_op} = {st.n(r)}{per}.")
    if last:
        st.facts.append(st.pick([f"{st.how()} does {B} {_base_form(verb)}{per}?",
                                 f"Then {st.how()[0].lower()}{st.how()[1:]} does {B} {_base_form(verb)}{per}?"]))
    st.pair = (a, q, b, r, kind)
    st.who, st.q = b, r
    return True


def _together(st: _State, d: Draw, last: bool) -> bool:
    verb, per = st.verb, st.per
    if st.pair:
        a, x, b, y, _ = st.pair
    else:
        a, x, b, y = st.who, st.q, st.new_person(), d.n(3, 60) if not st.per else d.n(2, 25)
        st.say(st.pick(["{B} {verb} {y}{per} as well.", "{A}'s friend {B} {verb} {y}{per}."]),
               A=a[0], B=b[0], verb=verb, y=st.n(y), per=per)
    r = x + y
    if r > MAX_RESULT:
        return False
    A, B = a[0], b[0]
    st.lines.append(f"Together they {_base_form(verb)} {st.op(x)} + {st.op(y)} = {st.n(r)}{per}.")
    st.last_subject = "they"
    if last:
        all_ = "together" if per else st.pick(["together", "in all", "altogether"])
        st.facts.append(st.pick([f"{st.how()} do {A} and {B} {_base_form(verb)} {all_}{per}?",
                                 f"{st.how()} do the two of them {_base_form(verb)} {all_}{per}?"]))
    elif not per:
        stuff = "money" if st.money else st.items
        st.facts.append(st.pick([f"{A} and {B} put their {stuff} together." if verb == "has" else
                                 f"{A} and {B} add up what they spent.", f"Then {A} and {B} pool their {stuff}."
                                 if verb == "has" else f"{A} and {B} add their costs together."]))
    st.who, st.group, st.q, st.pair = None, "they", r, None
    if verb != "spends":
        st.verb = "has"
    return True


def _diff(st: _State, d: Draw, last: bool) -> bool:
    verb, per = st.verb, st.per
    if st.pair and st.pair[4] in ("times", "part"):
        a, x, b, y, _ = st.pair
        hi, lo = ((b, y), (a, x)) if y > x else ((a, x), (b, y))
    else:
        c = st.new_person()
        gap = d.n(2, 40)
        if d.rng.random() < 0.5 or st.q <= gap:
            y = st.q + gap
            hi, lo = (c, y), (st.who, st.q)
        else:
            y = st.q - gap
            hi, lo = (st.who, st.q), (c, y)
        st.say(st.pick(["{C}, a friend, {verb} {y}{per}.", "{A}'s friend {C} {verb} {y}{per}."]),
               A=st.who[0], C=c[0], verb=verb, y=st.n(y), per=per)
    r = hi[1] - lo[1]
    if r < 2 or hi[1] > MAX_RESULT:
        return False
    H, L = hi[0][0], lo[0][0]
    more = "more" if st.money else f"more {st.items}"
    st.lines.append(f"{st.subject(H, hi[0])} {verb} {st.op(hi[1])} - {st.op(lo[1])} = {st.op(r)} {more} than {L}{per}.")
    much = "How much more money" if st.money else f"How many more {st.items}"
    st.facts.append(st.pick([f"{much} does {H} {_base_form(verb)} than {L}{per}?",
                             f"{much} does {H} {_base_form(verb)}{per} than {L} does?"]))
    st.q, st.pair = r, None
    return True


def _rate(st: _State, d: Draw, last: bool) -> bool:
    q, who = st.q, st.who
    if st.shop:
        h = d.n(2, 9)
        r = q * h
        A = st.name()
        st.say(st.pick(["{A} buys {h} {goods}.", "{A} picks up {h} {goods} there.", "{A} gets {h} of the {goods}."]),
               A=A, h=h, goods=st.shop)
        st.lines.append(f"{st.subject(A, who)} spends {h} x ${q} = ${r}.")
        if last:
            st.facts.append(st.pick([f"How much money does {A} spend?", f"What do the {st.shop} cost {A}?"]))
        st.shop, st.per, st.unit, st.verb, st.q, st.pair = "", "", "", "spends", r, None
        return True
    lo, hi = COUNT_RANGE[st.unit]
    h = d.n(lo, hi)
    r = q * h
    if r > MAX_RESULT:
        return False
    A, verb = st.name(), st.conj(st.verb)
    units = f"{h} {st.unit}s"
    if not last:
        st.say(st.pick(["{A} keeps this up for {units}.", "This goes on for {units}."]), A=A, units=units)
    else:
        aux, base = "do" if st.plural() else "does", _base_form(st.verb)
        st.facts.append(st.pick([f"{st.how()} {aux} {A} {base} in {units}?",
                                 f"{st.how()} {aux} {A} {base} after {units}?"]))
    subj = who[1] if who and st.last_subject == A else A
    st.lines.append(f"In {units} {subj} {verb} {st.op(q)} x {h} = {st.n(r)}.")
    st.last_subject = A
    st.per, st.unit, st.q, st.pair = "", "", r, None
    if st.verb != "spends":
        st.verb = "has"
    return True


def _spend(st: _State, d: Draw, last: bool) -> bool:
    q, who, A = st.q, st.who, st.name()
    if st.verb == "spends":  # q is money spent: what is left of what was brought
        m = q + d.n(1, 50)
        st.say(st.pick(["{A} had ${m} before shopping.", "{A} brought ${m} to the shop.",
                        "Before that, {A} had ${m} in {pos} purse."]),
               A=A, m=m, pos=who[3] if who else "their")
        x, y = m, q
    else:
        if q < 4:
            return False
        y = d.n(1, min(q - 2, 60))
        x = q
        if st.money:
            good = d.pick(GOODS)[0]
            st.say(st.pick(["{A} {spends} ${y} on a {good}.", "{A} {pays} ${y} for a {good}.",
                            "By {day}, {A} {has} spent ${y} of it."]),
                   A=A, y=y, good=good, day=d.pick(DAYS), spends=st.conj("spends"), pays=st.conj("pays"),
                   has=st.conj("has"))
        else:
            st.say(st.pick(["{A} {gives} {y} of them to a friend." if who else "{A} {gives} away {y} of them.",
                            "{A} {loses} {y} of them.", "By {day}, {A} {has} given away {y} of them.",
                            "{A} {uses} {y} of them."]),
                   A=A, y=y, day=d.pick(DAYS), gives=st.conj("gives"), loses=st.conj("loses"), uses=st.conj("uses"),
                   has=st.conj("has"))
    r = x - y
    st.lines.append(f"{st.subject(A, who)} {st.conj('has')} {st.op(x)} - {st.op(y)} = {st.n(r)} left.")
    if last:
        aux = "do" if st.plural() else "does"
        if st.money:
            st.facts.append(st.pick([f"How much money {aux} {A} still have?",
                                     f"What amount of money {aux} {A} have left?"]))
        else:
            st.facts.append(st.pick([f"How many {st.items} {aux} {A} have left?",
                                     f"How many {st.items} {aux} {A} still have?"]))
    st.verb, st.q, st.pair = "has", r, None
    return True


def _gain(st: _State, d: Draw, last: bool) -> bool:
    q, who, A = st.q, st.who, st.name()
    y = d.n(2, 40)
    r = q + y
    if r > MAX_RESULT:
        return False
    aux = "do" if st.plural() else "does"
    if st.verb == "spends":
        good = d.pick(GOODS)[0]
        st.say(st.pick(["{A} also {pays} ${y} for a {good}.", "Then {A} {spends} ${y} more on a {good}."]),
               A=A, y=y, good=good, pays=st.conj("pays"), spends=st.conj("spends"))
        st.lines.append(f"{st.subject(A, who)} {st.conj('spends')} {st.op(q)} + {st.op(y)} = {st.n(r)} in all.")
        if last:
            st.facts.append(st.pick([f"How much money {aux} {A} spend in all?",
                                     f"How much {aux} {A} spend altogether?"]))
    else:
        if st.money:
            st.say(st.pick(["{A} {earns} ${y} more.", "{A} {gets} ${y} from a friend.",
                            "On {day}, a friend gives {A} ${y}." if who else "{A} {finds} ${y}."]),
                   A=A, y=y, day=d.pick(DAYS), earns=st.conj("earns"), gets=st.conj("gets"), finds=st.conj("finds"))
        else:
            friend = "On {day}, a friend gives {A} {y} more {items}." if who else "{A} {finds} {y} more {items}."
            st.say(st.pick(["{A} {finds} {y} more.", friend, "Later, {A} {gets} {y} more {items}.",
                            "{A} {buys} {y} more {items}."]),
                   A=A, y=y, items=st.items, day=d.pick(DAYS), finds=st.conj("finds"), gets=st.conj("gets"),
                   buys=st.conj("buys"))
        st.lines.append(f"{st.subject(A, who)} {st.conj('has')} {st.op(q)} + {st.op(y)} = {st.n(r)} now.")
        if last:
            st.facts.append(f"{st.how()} {aux} {A} have now?")
    st.q, st.pair = r, None
    return True


def _share(st: _State, d: Draw, last: bool) -> bool:
    q, A = st.q, st.name()
    ks = [k for k in range(2, 10) if q % k == 0 and q // k >= 2]
    if not ks:
        return False
    k = d.pick(ks)
    r = q // k
    if st.verb == "spends":  # a shared cost: each pays
        st.say(st.pick(["The cost is split equally among {k} friends.", "The {k} friends share this cost equally."]),
               k=k)
        st.lines.append(f"Each friend pays {st.op(q)} / {k} = {st.n(r)}.")
        if last:
            st.facts.append(st.pick(["How much does each friend pay?", "What is each friend's share?"]))
        st.terminal = True
    elif last and not st.money and d.rng.random() < 0.4:  # into boxes: nothing can follow
        box, boxes = d.pick(CONTAINERS)
        st.say("{A} {puts} them into {k} {boxes} with the same number in each.", A=A, k=k, boxes=boxes,
               puts=st.conj("puts"))
        st.lines.append(f"Each {box} holds {q} / {k} = {st.n(r)}.")
        st.facts.append(f"How many {st.items} go in each {box}?")
        st.terminal = True
    else:
        stuff = "the money" if st.money else "them"
        st.say(st.pick(["{A} {shares} {stuff} equally among {k} friends.", "{A} {splits} {stuff} equally between "
                        "{k} friends."]), A=A, stuff=stuff, k=k, shares=st.conj("shares"), splits=st.conj("splits"))
        st.lines.append(f"Each friend gets {st.op(q)} / {k} = {st.n(r)}.")
        if last:
            st.facts.append(st.pick([f"{st.how()} does each friend get?", f"{st.how()} is each friend's share?"]))
        st.who, st.group = None, "each friend"
    st.last_subject = "each friend"
    st.q, st.pair, st.verb = r, None, "has"
    return True


STEPS = {"more": _relation, "fewer": _relation, "times": _relation, "part": _relation, "together": _together,
         "diff": _diff, "rate": _rate, "spend": _spend, "gain": _gain, "share": _share}


def _attempt(rng: random.Random) -> Problem | None:
    d = Draw(rng)
    people = rng.sample(PEOPLE, 5)
    item, items = rng.choice(ITEMS)
    st = _State(rng, d, people, item, items, money=False)
    opening = _open(st, d)
    length = rng.choice(LENGTHS)
    sig: list[str] = []
    while len(sig) < length:
        last = len(sig) == length - 1
        kinds = [k for k in KINDS if _ok(k, st, last) and not excluded(tuple(sig) + (k,))]
        rng.shuffle(kinds)
        for kind in kinds:
            fn = STEPS[kind]
            saved = dict(vars(st), people=list(st.people), lines=list(st.lines), facts=list(st.facts))
            if fn(kind, st, d, last) if fn is _relation else fn(st, d, last):
                sig.append(kind)
                break
            vars(st).update(saved)  # a step that cannot work leaves the story as it was
        else:
            return None  # a dead end: draw another story
    question = " ".join([opening] + st.facts)
    answer = st.q
    return Problem(family_name(tuple(sig)), 0, question, "\n".join(st.lines + [f"The answer is {answer}."]), answer)


def generate(n: int, seed: int = 0) -> list[Problem]:
    """`n` story problems, deterministic in (n, seed); none has a held-out signature (see `excluded`)."""
    rng = random.Random(f"stories:{seed}")
    out: list[Problem] = []
    while len(out) < n:
        p = _attempt(rng)
        if p is not None:
            out.append(p)
    return out
