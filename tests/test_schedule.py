import pytest

from aiayn.train.schedule import learning_rate


def test_peak_at_warmup_with_the_papers_value():
    rates = [learning_rate(s, 512, 4000) for s in range(1, 20001)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == 4000
    assert learning_rate(4000, 512, 4000) == pytest.approx(512**-0.5 * 4000**-0.5)
    assert learning_rate(4000, 512, 4000) == pytest.approx(6.987712429686844e-4)


def test_golden_values():
    assert learning_rate(1, 512, 4000) == pytest.approx(512**-0.5 * 4000**-1.5)
    assert learning_rate(2000, 512, 4000) == pytest.approx(0.5 * learning_rate(4000, 512, 4000))
    assert learning_rate(16000, 512, 4000) == pytest.approx(0.5 * learning_rate(4000, 512, 4000))
    assert learning_rate(100000, 1024, 4000, lr_scale=2.0) == pytest.approx(2 * 1024**-0.5 * 100000**-0.5)


def test_step_zero_is_an_error():
    with pytest.raises(ValueError, match="from 1"):
        learning_rate(0, 512, 4000)
