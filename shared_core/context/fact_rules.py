"""Durable facts from conversation turns by rules, without a model (:mod:`.extraction` adds the model).

**Rule-based fact extraction** (0 tokens). A bad fact is worse than a missed one, so the rules
accept only a few sentence shapes and refuse anything uncertain. The **user's** messages are read,
and, as seed 001 has it ("facts can come from user statements, tool results, or agent
observations"), two others in the user's words: a **tool result**'s first 20 sentences that state
something about "the user" in the third person (read as first person) or about a durable thing
(the ``thing`` and ``dated`` shapes), never one in the first person (a tool speaking of itself)
nor the results of :data:`ECHO_TOOLS` (the memory's own tools, which repeat what it holds); and the
**assistant's observations**: its sentences that start by addressing the user ("Noted: you prefer
window seats" -> "I prefer window seats"), never one where it speaks of itself, and no roles
("you are a great writer" is praise). ``ExtractedFact.origin`` says which. Each message is split
into sentences, and a sentence is **refused** when:

* it is a question (ends with ``?``) or shorter than 3 / longer than 30 words;
* it speaks to or about the assistant (``you``, ``your``), reports someone else (``said``,
  ``told me``, ``asked``), or hedges (``maybe``, ``perhaps``, ``probably``, ``might``, ``if``,
  ``would``, ``could``, ``should``, ``I think``, ``I guess``, ``not sure``, ``hope``, ``wish``...);
* it mentions a secret (``password``, ``PIN``, ``API key``, ``token``, card numbers...): never a fact;
* it is tied to the moment (``today``, ``tomorrow``, ``yesterday``, ``tonight``, ``right now``,
  ``at the moment``, ``currently``, ``this/next/last week``, ``soon``...): stored for good, a
  relative date turns false.

Leading discourse words are dropped first ("oh,", "by the way,", "just so you know,",
"remember that", "for the record,"); "actually,", "no,", "correction:", "oops," and "I meant"
mark the fact as a **correction**, and so does a closing ", not X" ("Call me Priya, not Pri":
``replaces == "Pri"``). Some wordings are read as what they mean first: "I don't use Vim
anymore" -> "I no longer use Vim"; "My name isn't Pri, it's Priya" -> "My name is Priya, not
Pri"; "I'm not a nurse, I'm a doctor" -> "I am a doctor, not a nurse". What is left must match
one of these shapes (case-insensitive), and becomes a third-person fact ("my" -> "the user's",
"I" -> "the user", "me" -> "the user"):

========== =============================================== ====================================
rule       shape                                           example -> fact
========== =============================================== ====================================
name       my name is / call me / I'm called <name>        My name is Priya -> The user's name is Priya.
possession my|our <thing> is|are|runs|uses|... <value>     My cat's name is Miso -> The user's cat's name is Miso.
identity   I am|I'm a|an <role>; I'm allergic to / from /  I'm a nurse -> The user is a nurse.
           based in / vegan / N years old ...
place      I live|work|moved|grew up|was born|study        I live in Lisbon -> The user lives in Lisbon.
           in|at|for|to|as|on|near|from <place>
preference I prefer|like|love|enjoy|hate|dislike|don't     I prefer window seats -> The user prefers window seats.
           like|avoid|always use|never use <thing>
usage      I speak|own|drive|use|play <thing>              I speak Dutch -> The user speaks Dutch.
have       I have|I've got a|an|<number> <thing>           I have two kids -> The user has two kids.
decision   we|I decided|agreed|chose|settled on ...;       We decided to use Postgres -> Decision: use Postgres.
           let's go with|use|stick with ...; decision: ...
dated      the|our <deadline|meeting|launch|release|...>   The deadline for Atlas is 14 March -> (kept as said)
           is|falls|starts|ends <a date>
thing      the|our <thing> runs on|is hosted on|is located The production server runs on Fly.io -> (kept as said)
           in|expires on|... <value>
negation   I'm not|no longer <identity>; I no longer|don't I no longer use Vim -> The user no longer uses Vim.
           |never live|work|use|speak|own|drive|play|have
           |like|eat|drink|smoke ...; I stopped|quit using
========== =============================================== ====================================

and the value must be a value: not a bare pronoun ("I like it"), not a passing state or verdict
("my code is broken", "my wife is busy": a list of such words), not about a transient thing
("my question is", "I have a problem": a list of such nouns), at most 15 words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..summarize import split_sentences
from .messages import Turn
from .records import ExtractedFact

__all__ = ["extract_facts", "finish_fact", "ECHO_TOOLS"]

# -- the rules ----------------------------------------------------------------------------------

_WORDS = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)
_LEADING = re.compile(
    r"^(?:(?:oh|ah|well|so|also|and|btw|by the way|fyi|ok|okay|alright|hey|hi|hello|just so you know|"
    r"for the record|for your information|note that|remember that|please remember that|please note that|"
    r"just to let you know|as i said|like i said)\s*[,:;.!-]?\s+)+",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^(?:(?:actually|no|nope|sorry|correction|small correction|to correct that|let me correct that|to clarify|"
    r"scratch that|oops|my mistake|my bad|i meant|i mean|wait)\s*[,:;.!-]?\s+)+", re.IGNORECASE
)
_REFUSE = re.compile(
    r"\b(?:you|your|yours|you're|youre|you've|you'll|you'd|yourself|said|says|told me|tells me|asked|asks|"
    r"maybe|perhaps|probably|possibly|might|may be|if|whether|would|could|should|i'd|i think|i guess|"
    r"i suppose|i wonder|i believe|i assume|i feel like|not sure|unsure|no idea|don't know|do not know|"
    r"hope|hopefully|wish|kind of|sort of|someday|imagine|pretend|hypothetically|suppose|supposedly|"
    r"today|tonight|tomorrow|yesterday|right now|at the moment|currently|this week|next week|last week|"
    r"this month|next month|this morning|this evening|this afternoon|soon|later|recently|lately|"
    r"these days|for now|for the moment|anymore|any more|still|again|almost|nearly)\b",
    re.IGNORECASE,
)
_PRONOUNS = frozenset("it this that them these those you him her us something anything everything nothing".split())
_REFERENCES = frozenset("one ones above former latter same option previous".split())  # "my favourite is the second one"
_SECRETS = re.compile(r"\b(?:password|passcode|passphrase|pin|pin code|secret|api key|access key|token|ssn|social security|"
                      r"cvv|credit card number|card number|private key|iban)\b", re.I)  # never stored as facts
_TRANSIENT_NOUNS = frozenset("""
question questions problem problems issue issues point guess bad pleasure concern concerns request requests task
tasks idea ideas thought thoughts answer answers message messages mistake mistakes fault turn suggestion doubt
headache cold fever flu hangover mood day night morning evening week weekend break lunch dinner breakfast plan
plans attempt try test tests build error errors output result results connection internet battery screen
option options choice choices order orders status response request session file files clue
""".split())
_STATES = frozenset("""
broken down slow stuck failing failed crashing crashed dead gone missing wrong weird strange annoying annoyed
confusing confused tired busy sick ill hungry thirsty sleepy bored boring fine ok okay great good bad awful terrible
horrible amazing awesome nice cool done finished ready here there coming late early happy sad angry upset
worried excited nervous scared afraid sorry glad fun funny hard easy difficult simple important interesting
better worse best worst right correct true false full empty open closed lost back away off on out over
working running loading compiling waiting pending confirmed cancelled canceled shipped delivered booked received sent
approved rejected updated saved deleted fixed resolved welcome
""".split())
_INTENSIFIERS = frozenset("bit little lot so very really too quite pretty extremely totally super kinda".split())
_OPENERS = frozenset("when how what whatever why where who whenever wherever".split())  # "I hate when ...": a feeling
_PLACE_PREPS = frozenset("in at for to as on near from with".split())
_DATED_NOUNS = ("deadline", "meeting", "launch", "release", "due date", "appointment", "birthday", "anniversary",
                "exam", "interview", "wedding", "milestone", "kickoff", "kick-off", "demo", "go-live")
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE = re.compile(rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
                   rf"\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}|\b(?:19|20)\d{{2}}\b)", re.IGNORECASE)

_NAME = re.compile(r"^(?:my name is|my name's|i am called|i'm called|call me|people call me)\s+(?P<value>.+)$", re.I)
_POSSESSION = re.compile(
    r"^(?P<det>my|our)\s+(?P<thing>[^\W\d_][\w'\u2019-]*(?:\s+[\w'\u2019-]+){0,4}?)\s+"
    r"(?P<verb>is|are|was born|runs|run|uses|use|lives|live|works|work|starts|start|ends|end|falls|costs|cost|"
    r"comes|come|expires|expire|renews|opens|closes|weighs|means)\s+(?P<value>.+)$",
    re.I,
)
_IDENTITY_VALUE = (
    r"(?P<value>(?:an?\s+.+)|(?:allergic|intolerant)\s+to\s+.+|(?:originally\s+)?from\s+.+|"
    r"based\s+in\s+.+|\d+\s+years\s+old|(?:vegan|vegetarian|pescatarian|diabetic|left-handed|right-handed|"
    r"colou?r-?blind|married|divorced|retired|self-employed|lactose intolerant|gluten intolerant)\b.*)"
)
_IDENTITY = re.compile(rf"^(?:i am|i'm)\s+{_IDENTITY_VALUE}$", re.I)
_NEG_IDENTITY = re.compile(rf"^(?:i am|i'm)\s+(?P<neg>not|no longer)\s+{_IDENTITY_VALUE}$", re.I)
_PLACE = re.compile(
    r"^i\s+(?P<verb>live|lived|moved|work|worked|grew up|was born|study|studied|relocated)\s+"
    r"(?P<value>(?:in|at|for|to|as|on|near|from|with)\s+.+)$",
    re.I,
)
_PREFERENCE = re.compile(
    r"^i\s+(?:really\s+|absolutely\s+|strongly\s+|generally\s+|usually\s+)?"
    r"(?P<verb>prefer|like|love|enjoy|hate|dislike|can't stand|cannot stand|don't like|do not like|don't eat|"
    r"never eat|don't drink|never drink|avoid|always use|never use)\s+(?P<value>.+)$",
    re.I,
)
_USAGE = re.compile(r"^i\s+(?P<verb>speak|own|drive|use|play)\s+(?P<value>.+)$", re.I)
_HAVE = re.compile(
    r"^(?:i have|i've got|i have got|i've)\s+(?P<value>(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+.+)$",
    re.I,
)
_DECISION = re.compile(
    r"^(?:(?:we|i)\s+(?:have\s+|'ve\s+)?(?:decided|agreed|chose|settled on|are going with|'re going with|"
    r"will go with|'ll go with|went with)|(?:let's|lets|let us)(?=\s+(?:go with|use|stick with|pick)\s)|"
    r"(?:the\s+)?(?:final\s+)?decision(?:\s+is)?\s*[:-]?)\s+(?P<value>.+)$",
    re.I,
)
_DATED = re.compile(r"^(?P<det>the|our)\s+(?P<thing>.{2,60}?)\s+(?P<verb>is|are|falls|starts|ends|was moved to|"
                    r"is due|is set for|is scheduled for)\s+(?P<value>.+)$", re.I)
# negations and changes: "I no longer use Vim", "I don't live in Oslo", "I stopped using Vim"
_NEG_VERB = re.compile(r"^i\s+(?P<neg>no longer|don't|do not|never)\s+(?P<verb>live|work|study|use|speak|own|drive|play|"
                       r"have|like|love|enjoy|eat|drink|smoke)\b\s*(?P<value>.*)$", re.I)
_STOPPED = re.compile(r"^i\s+(?:have\s+|'ve\s+)?(?:stopped|quit|gave up)\s+(?P<verb>using|eating|drinking|playing|driving|"
                      r"smoking|speaking)\b\s*(?P<value>.*)$", re.I)
# a durable thing in the third person, as tool results and users state it: "The production server runs on Fly.io"
_THING = re.compile(
    r"^(?P<det>the|our)\s+(?P<thing>[^\W\d_][\w'-]*(?:\s+[\w'.-]+){0,4}?)\s+"
    r"(?P<verb>runs on|runs in|runs at|is hosted on|is hosted in|is hosted at|is hosted by|is deployed to|is deployed on|"
    r"is deployed in|is located in|is located at|is based in|is stored in|is stored on|expires on|renews on)\s+(?P<value>.+)$",
    re.I,
)
_NO_VALUE_NEEDED = frozenset({"smoke", "drink", "drive", "smoking", "drinking", "driving"})  # "I no longer smoke"
_GERUNDS = {"using": "use", "eating": "eat", "drinking": "drink", "playing": "play", "driving": "drive",
            "smoking": "smoke", "speaking": "speak"}
_PLACE_VERBS = frozenset({"live", "work", "study"})

_CONJUGATE = {
    "live": "lives", "lived": "lived", "moved": "moved", "work": "works", "worked": "worked", "grew up": "grew up",
    "was born": "was born", "study": "studies", "studied": "studied", "relocated": "relocated",
    "prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "hate": "hates",
    "dislike": "dislikes", "can't stand": "can't stand", "cannot stand": "cannot stand",
    "don't like": "doesn't like", "do not like": "does not like", "don't eat": "doesn't eat",
    "never eat": "never eats", "don't drink": "doesn't drink", "never drink": "never drinks", "avoid": "avoids",
    "always use": "always uses", "never use": "never uses", "speak": "speaks", "own": "owns", "drive": "drives",
    "use": "uses", "play": "plays", "have": "has", "eat": "eats", "drink": "drinks", "smoke": "smokes",
}
_NEGATED = {"no longer": "no longer {third}", "don't": "doesn't {base}", "do not": "does not {base}",
            "never": "never {third}"}
# "I don't use Vim anymore" -> "I no longer use Vim" ("anymore" alone is a passing state, see _REFUSE)
_REWORDS = (
    (re.compile(r"\bi\s+(?:don't|do not|didn't|did not)\s+(?P<rest>\w[^,;]*?)\s*,?\s+(?:anymore|any more|any longer)\b",
                re.I), r"I no longer \g<rest>"),
    (re.compile(r"\b(?P<be>i am|i'm)\s+not\s+(?P<rest>\w[^,;]*?)\s*,?\s+(?:anymore|any more|any longer)\b", re.I),
     r"\g<be> no longer \g<rest>"),
    # "My name isn't Pri, it's Priya" -> "My name is Priya, not Pri"
    (re.compile(r"\b(?P<subject>my\s+[\w' -]+?)\s+(?:is not|isn't)\s+(?P<old>[^,;]+?)\s*[,;]\s*(?:it's|it is)\s+"
                r"(?P<new>[^,;.!]+)", re.I), r"\g<subject> is \g<new>, not \g<old>"),
    (re.compile(r"\b(?:i am|i'm)\s+not\s+(?P<old>[^,;]+?)\s*[,;]\s*(?:i am|i'm)\s+(?P<new>[^,;.!]+)", re.I),
     r"I am \g<new>, not \g<old>"),
)
_NOT_TAIL = re.compile(r"^(?P<head>.+?)\s*,\s*(?:and\s+)?not\s+(?P<old>[^\W_][\w' .-]{0,40}?)$", re.I)  # "Priya, not Pri"
# the assistant's observations of the user ("Noted: you prefer window seats") become the user's own words
_ASSISTANT_LEADING = re.compile(
    r"^(?:(?:got it|noted|understood|great|perfect|good to know|thanks(?: for (?:letting me know|telling me))?|thank you|"
    r"sure|i see|i understand|i've noted|i have noted|i'll remember|i will remember|so|ok|okay|alright)(?:\s+that)?"
    r"\s*[,:;.!-]?\s+)+",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|me|my|mine|myself|we|we're|we've|our|ours|us)\b", re.I)
_SECOND_PERSON = (
    (re.compile(r"\byou're\b", re.I), "I'm"), (re.compile(r"\byou are\b", re.I), "I am"),
    (re.compile(r"\byou've\b", re.I), "I've"), (re.compile(r"\byou have\b", re.I), "I have"),
    (re.compile(r"\byourself\b", re.I), "myself"), (re.compile(r"\byours\b", re.I), "mine"),
    (re.compile(r"\byour\b", re.I), "my"), (re.compile(r"\byou\b", re.I), "I"),
)
# a tool's "The user lives in Oslo" read as the user's own words
_USER_SUBJECT = re.compile(r"^(?:the\s+)?user(?P<own>'s)?\s+(?P<rest>.+)$", re.I)
_BASE_FORMS = {third: base for base, third in _CONJUGATE.items() if " " not in base and third != base}
_BASE_FORMS.update({"is": "am", "doesn't": "don't", "does": "do", "has": "have"})
# tools whose results repeat what memory already holds: reading facts from them would only echo it
ECHO_TOOLS = frozenset({
    "memory_store", "memory_query", "memory_reinforce", "memory_demote", "memory_update", "memory_recall",
    "memory_search", "memory_save", "searchKnowledgeBase", "getFullDocumentContent", "listKnowledgeBaseDocuments",
    "manage_memory", "search_memory",  # LangMem's two
})
_OBSERVED = frozenset({"name", "possession", "identity", "place", "preference", "usage", "have"})  # from the assistant
_TOOL_SENTENCES = 20  # sentences of one tool result read for facts, at most (a fetched page is not a memory)
_ORIGINS = {"user": "user", "tool": "tool", "assistant": "assistant"}
_THIRD_PERSON = (
    (re.compile(r"\bmy\b", re.I), "the user's"), (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bmyself\b", re.I), "the user"), (re.compile(r"\bme\b", re.I), "the user"),
    (re.compile(r"\bI'm\b"), "the user is"), (re.compile(r"\bI\b"), "the user"),
    (re.compile(r"\bour\b", re.I), "the user's"),
)
_CLAUSES = re.compile(r"\s*[,;]?\s+(?:and|but|so|while)\s+(?=(?:i|i'm|i've|my|we|we're|our)\b)|\s*;\s+",
                      re.IGNORECASE)  # "I live in Lisbon and I prefer window seats": two statements
_IDIOMS = re.compile(r"^(?:in fear|in hope|in denial|in the moment|for the moment|for now|on it|at it)\b", re.I)


def _clean(sentence: str) -> tuple[str, bool]:
    text = " ".join(sentence.replace("\u2019", "'").split()).strip(" \"'`*_")
    text = _LEADING.sub("", text)
    correction = False
    stripped = _CORRECTION.sub("", text)
    if stripped != text:
        correction, text = True, _LEADING.sub("", stripped)
    return text.rstrip(" .!;:"), correction


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORDS.findall(text)]


def _third_person(text: str) -> str:
    for pattern, replacement in _THIRD_PERSON:
        text = pattern.sub(replacement, text)
    return text


def _value_ok(value: str, *, max_words: int = 15) -> bool:
    """A value: some words, not a bare pronoun, not a passing state or verdict, not too long."""
    words = _words(value)
    if not words or len(words) > max_words or _IDIOMS.match(value):
        return False
    if words[0] in _PRONOUNS or words[-1] in _REFERENCES:
        return False
    if words[0] in _INTENSIFIERS | _OPENERS or (words[0] in {"a", "an"} and len(words) > 1 and words[1] in _INTENSIFIERS):
        return False
    if words[0] in {"not", "never", "no"} and len(words) <= 3:
        return False
    content = [w for w in words if w not in {"a", "an", "the", "so", "very", "really", "too", "just", "not"}]
    if not content or all(w in _STATES for w in content):
        return False
    if len(content) == 1 and content[0].endswith(("ing", "ed", "ly")) and not value[:1].isupper():
        return False
    return True


def _thing_ok(thing: str) -> bool:
    words = _words(thing)
    return bool(words) and words[-1] not in _TRANSIENT_NOUNS and "i" not in words and "you" not in words


def _sentence_fact(text: str) -> tuple[str, str] | None:
    """(rule, fact text) for one cleaned sentence, or None."""
    if match := _NAME.match(text):
        value = match["value"]
        words = _words(value)
        if 1 <= len(words) <= 4 and all(w.isalpha() or "-" in w or "'" in w for w in value.split()) \
                and not set(words) & (_STATES | _PRONOUNS | {"not", "a", "an", "the"}):
            return "name", f"The user's name is {value}"
        return None
    if match := _POSSESSION.match(text):
        thing, verb, value = match["thing"], match["verb"].lower(), match["value"]
        if _thing_ok(thing) and _value_ok(value):
            return "possession", f"The user's {_third_person(thing)} {verb} {_third_person(value)}"
        return None
    if match := _NEG_IDENTITY.match(text) or _IDENTITY.match(text):
        value = match["value"]
        words = _words(value)
        if words[0] in {"a", "an"} and (len(words) < 2 or words[1] in _INTENSIFIERS | {"lot", "huge", "big"}
                                        or len(words) > 8):
            return None
        if _value_ok(value):
            negation = f"{match['neg'].lower()} " if "neg" in match.groupdict() else ""
            return "identity", f"The user is {negation}{_third_person(value)}"
        return None
    if match := _PLACE.match(text):
        verb, value = match["verb"].lower(), match["value"]
        if _value_ok(value, max_words=12):
            return "place", f"The user {_CONJUGATE[verb]} {_third_person(value)}"
        return None
    if match := _PREFERENCE.match(text):
        verb, value = " ".join(match["verb"].lower().split()), match["value"]
        words = _words(value)
        if _value_ok(value, max_words=12) and words[0] not in _PRONOUNS and (words[0] != "to" or len(words) >= 3):
            return "preference", f"The user {_CONJUGATE[verb]} {_third_person(value)}"
        return None
    if found := _negated_fact(text):
        return found
    if match := _USAGE.match(text):
        verb, value = match["verb"].lower(), match["value"]
        if _value_ok(value, max_words=10) and _words(value)[0] not in _PRONOUNS:
            return "usage", f"The user {_CONJUGATE[verb]} {_third_person(value)}"
        return None
    if match := _HAVE.match(text):
        value = match["value"]
        words = _words(value)
        if len(words) >= 2 and words[1] not in _TRANSIENT_NOUNS and words[-1] not in _TRANSIENT_NOUNS \
                and _value_ok(value, max_words=12):
            return "have", f"The user has {_third_person(value)}"
        return None
    if match := _DECISION.match(text):
        value = re.sub(r"^(?:to|that|on)\s+", "", match["value"], flags=re.I)
        if _value_ok(value, max_words=25):
            return "decision", f"Decision: {_third_person(value)}"
        return None
    if match := _THING.match(text):
        if _thing_ok(match["thing"]) and _words(match["thing"])[0] != "user" and _value_ok(match["value"]):
            det = "The user's" if match["det"].lower() == "our" else "The"
            return "thing", f"{det} {_third_person(match['thing'])} {match['verb'].lower()} {_third_person(match['value'])}"
        return None
    if match := _DATED.match(text):
        thing = match["thing"].casefold()
        if any(re.search(rf"\b{re.escape(n)}\b", thing) for n in _DATED_NOUNS) and _DATE.search(match["value"]):
            det = "The user's" if match["det"].lower() == "our" else "The"
            return "dated", f"{det} {_third_person(match['thing'])} {match['verb'].lower()} {match['value']}"
        return None
    return None


def _negated_fact(text: str) -> tuple[str, str] | None:
    """(rule, fact) of "I no longer use Vim", "I don't live in Oslo", "I stopped using Vim"; else None."""
    if match := _STOPPED.match(text):
        verb, negation = _GERUNDS[match["verb"].lower()], "no longer"
    elif match := _NEG_VERB.match(text):
        verb, negation = match["verb"].lower(), " ".join(match["neg"].lower().split())
    else:
        return None
    value = match["value"].strip()
    words = _words(value)
    if not words:
        if verb not in _NO_VALUE_NEEDED:
            return None
    elif verb in _PLACE_VERBS:
        if words[0] not in _PLACE_PREPS or not _value_ok(value, max_words=12):
            return None
    elif verb == "have":
        if not re.match(r"(?:an?|any|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+\S", value, re.I) \
                or len(words) < 2 or {words[1], words[-1]} & _TRANSIENT_NOUNS or not _value_ok(value, max_words=12):
            return None
    elif words[0] in _PRONOUNS or not _value_ok(value, max_words=12):
        return None
    phrase = _NEGATED[negation].format(third=_CONJUGATE[verb], base=verb)
    rule = {"live": "place", "work": "place", "study": "place", "have": "have", "like": "preference",
            "love": "preference", "enjoy": "preference", "eat": "preference", "drink": "preference"}.get(verb, "usage")
    return rule, f"The user {phrase} {_third_person(value)}".rstrip()


def finish_fact(text: str) -> str:
    """One sentence as a stored fact: single spaces, a capital first letter, one full stop."""
    text = " ".join(text.split()).rstrip(" .,;:!")
    return text[:1].upper() + text[1:] + "."


def extract_facts(turns: Sequence[Turn], *, max_facts: int = 20, max_chars: int = 300) -> list[ExtractedFact]:
    """The rule-based facts of the turns, in order, without duplicates (see the module docs): the user's
    statements, tool results (not of :data:`ECHO_TOOLS`) and the assistant's observations of the user."""
    out: list[ExtractedFact] = []
    seen: set[str] = set()
    for turn in turns:
        origin = _ORIGINS.get(turn.role)
        if origin is None or not turn.text.strip() or (origin == "tool" and (turn.name or "") in ECHO_TOOLS):
            continue
        sentences = split_sentences(turn.text)
        for said in sentences[:_TOOL_SENTENCES] if origin == "tool" else sentences:
            whole = _as_user_words(said, origin)
            if whole is None:
                continue
            opening = _clean(whole)[0]
            if said.rstrip().endswith("?") or _REFUSE.search(opening) or _SECRETS.search(opening):
                continue  # a hedge or a secret anywhere in the sentence taints all of its clauses
            for sentence in _CLAUSES.split(whole):
                found = _clause_fact(sentence)
                if found is None:
                    continue
                rule, fact, correction, replaces = found
                if origin == "assistant" and (rule not in _OBSERVED or re.match(r"The user is (?:an?|not an?) ", fact)):
                    continue  # the agent's say-so about the user's role is praise, not an observation
                fact = finish_fact(fact)
                key = fact.casefold()
                if len(fact) > max_chars or key in seen:
                    continue
                seen.add(key)
                out.append(ExtractedFact(fact, rule, said.strip(), turn.index, correction, origin, replaces))
                if len(out) >= max_facts:
                    return out
    return out


def _as_user_words(sentence: str, origin: str) -> str | None:
    """The sentence as the user would have said it (what the rules read), or None when it is not about them.

    The assistant's observations speak to the user ("Noted, you prefer window seats"): second person
    becomes first, and a sentence where the assistant speaks of itself is left out. A tool result's
    statements about "the user" become first person; other third-person statements stay as they are.
    """
    text = " ".join(sentence.replace("\u2019", "'").split())
    if origin == "assistant":
        text = _ASSISTANT_LEADING.sub("", text)
        if _FIRST_PERSON.search(text) or not re.match(r"(?:you|your)\b", text, re.I):
            return None
        for pattern, replacement in _SECOND_PERSON:
            text = pattern.sub(replacement, text)
    elif origin == "tool":
        if _FIRST_PERSON.search(text):  # a tool speaking of itself, or quoting someone
            return None
        if (match := _USER_SUBJECT.match(text)) is None:
            return _reword(text)
        rest = match["rest"]
        if match["own"]:
            text = f"my {rest}"
        else:
            first, _, after = rest.partition(" ")
            if first.lower() in ("no", "never") and after:  # "no longer lives", "never eats"
                lead, _, after = (("no longer", "", after[len("longer "):]) if after.lower().startswith("longer ")
                                  else (first, "", after))
                verb, _, tail = after.partition(" ")
                text = f"I {lead} {_BASE_FORMS.get(verb.lower(), verb)} {tail}"
            else:
                text = f"I {_BASE_FORMS.get(first.lower(), first)} {after}"
    return _reword(text)


def _reword(text: str) -> str:
    """"I don't use Vim anymore" -> "I no longer use Vim"; "My name isn't Pri, it's Priya" -> "My name is Priya, not Pri"."""
    for pattern, replacement in _REWORDS:
        text = pattern.sub(replacement, text)
    return text


def _clause_fact(sentence: str) -> tuple[str, str, bool, str | None] | None:
    """(rule, fact, is a correction, the value it replaces) of one clause, or None."""
    text, correction = _clean(sentence)
    replaces = None
    if match := _NOT_TAIL.match(text):  # "Call me Priya, not Pri": a correction naming what it corrects
        if len(_words(match["old"])) <= 4 and not _REFUSE.search(match["old"]):
            text, replaces, correction = match["head"], match["old"].strip(), True
    if not 3 <= len(_words(text)) <= 30:
        return None
    found = _sentence_fact(text)
    if found is None or re.search(r"\b(?:I|we)\b", found[1]):  # a first person left over: not one fact
        return None
    return found[0], found[1], correction, replaces
