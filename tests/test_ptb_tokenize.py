"""Raw text split as the Penn Treebank splits it (aiayn.parsing.ptb_tokenize)."""

import pytest

from aiayn.parsing.ptb_tokenize import ptb_words

CASES = [
    (
        'The dog doesn\'t bark (loudly), "he" said in the U.S.',
        "The dog does n't bark -LRB- loudly -RRB- , `` he '' said in the U.S. .",
    ),
    ("It cost $1,000 at 10:30; AT&T's boss cannot come!", "It cost $ 1,000 at 10:30 ; AT&T 's boss can not come !"),
    ('The dogs\' owner said "no."', "The dogs ' owner said `` no . ''"),
    ("[He left.]", "-LSB- He left . -RSB-"),
    (
        "Wait... what? I'm sure we'll see; they'd say you've won.",
        "Wait ... what ? I 'm sure we 'll see ; they 'd say you 've won .",
    ),
    ("It is 3.5 % higher, a well-known #1.", "It is 3.5 % higher , a well-known # 1 ."),
    ("A 62%-owned unit paid US$5, or 5%.", "A 62%-owned unit paid US$ 5 , or 5 % ."),
    ("", ""),
]


@pytest.mark.parametrize("raw, words", CASES)
def test_raw_text_is_split_as_the_treebank(raw, words):
    assert " ".join(ptb_words(raw)) == words


@pytest.mark.parametrize("raw, words", CASES)
def test_treebank_words_come_out_unchanged(raw, words):
    assert " ".join(ptb_words(words)) == words
