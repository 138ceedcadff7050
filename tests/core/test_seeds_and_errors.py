"""Seeds are normalised data; errors carry their location and render on one line."""

import hashlib
import pickle

import numpy as np
import pytest

from recaudit.errors import ConfigError, DataError, closest, did_you_mean
from recaudit.seeds import derive_seed, make_rng, normalise_key


def _old(*keys):
    """The hash before normalisation: BLAKE2b of repr(keys)."""
    h = hashlib.blake2b(repr(tuple(keys)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def test_numpy_keys_give_the_seeds_of_the_equal_python_keys():
    assert derive_seed(np.int64(0)) == derive_seed(0) == _old(0)
    assert derive_seed(np.int32(7), np.float64(0.5), np.str_("x")) == derive_seed(7, 0.5, "x")
    assert derive_seed(np.bool_(True)) == derive_seed(True) != derive_seed(1)
    assert derive_seed([1, (2, "a")]) == derive_seed((1, (2, "a")))
    # Python-typed keys keep the seeds they always had (stored results stay reproducible)
    assert derive_seed(3, "perturb", 0.25, None) == _old(3, "perturb", 0.25, None)
    assert make_rng(np.int64(5)).random() == make_rng(5).random()


def test_keys_that_are_not_data_are_refused():
    with pytest.raises(TypeError, match="seed key"):
        derive_seed(object())
    with pytest.raises(TypeError, match="dict"):
        normalise_key({"a": 1})


def test_closest_names():
    assert closest("GRU4REC", ["gru4rec", "sasrec"]) == "gru4rec"
    assert closest("sasrc", ["gru4rec", "sasrec"]) == "sasrec"
    assert closest("zzz", ["gru4rec"]) is None
    assert did_you_mean("epoch", ["epochs"]) == " Did you mean 'epochs'?"
    assert did_you_mean("epochs", ["epochs"]) == ""


def test_errors_render_where_and_survive_pickling():
    e = ConfigError("must be >= 1", key="metrics.k", source="a.toml", line=16, hint="use 10")
    assert str(e) == "a.toml, line 16, key 'metrics.k': must be >= 1\n  hint: use 10"
    assert e.one_line() == "a.toml, line 16, key 'metrics.k': must be >= 1; hint: use 10"
    d = DataError("bad timestamp", source="f.csv", line=3, column="ts", hint="use seconds")
    for err in (e, d):
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err)
    assert ConfigError("x").located(key="k", line=2).one_line() == "line 2, key 'k': x"


def test_refused_writes_become_storage_errors_naming_the_file():
    import errno

    from recaudit.errors import StorageError, storage_error

    full = storage_error(OSError(errno.ENOSPC, "No space left on device", "/x/.a.npz.part"),
                         "/x/a.npz")
    assert str(full) == ("cannot write /x/a.npz: no space left on the device; free space there,"
                         " or write elsewhere")
    assert full.full and full.errno == errno.ENOSPC and isinstance(full, OSError)
    closed = storage_error(OSError(errno.EROFS, "Read-only file system", "/ro/sub"),
                           action="create the folder")
    assert closed.what == "cannot create the folder /ro/sub: the file system is read-only"
    assert not closed.full and closed.hint == "write elsewhere, to a folder you can write to"
    assert storage_error(OSError(errno.EACCES, "x", "/p")).reason == "permission denied"
    # another library's error that quotes the system's words: the file it names
    duck = storage_error(RuntimeError('IO Error: Could not write file "/d/s.duckdb.wal": Disk '
                                      'quota exceeded'))
    assert duck.path == "/d/s.duckdb.wal" and duck.full
    assert storage_error(OSError(errno.ENOENT, "No such file", "/p")) is None
    assert storage_error(ValueError("bad value")) is None
    assert storage_error(full) is full
    again = pickle.loads(pickle.dumps(closed))
    assert isinstance(again, StorageError) and str(again) == str(closed)


def test_a_trial_error_names_the_trial_and_travels_between_processes():
    from recaudit.errors import ModelError, TrialError

    bug = TrialError("m · random-delete · seed 1", ValueError("learning rate\n must be > 0"))
    assert str(bug) == ("trial m · random-delete · seed 1 failed: ValueError: learning rate "
                        "must be > 0")
    assert not bug.expected
    told = TrialError("m · p · seed 0", ModelError("M.rank must return RankLists (got list)"))
    assert told.expected and str(told).endswith("failed: M.rank must return RankLists (got list)")
    for err in (bug, told):
        back = pickle.loads(pickle.dumps(err))
        assert (type(back), str(back), back.expected, back.trial) == (
            TrialError, str(err), err.expected, err.trial)


def test_an_interruption_says_its_signal_and_what_it_abandoned():
    import signal

    from recaudit.errors import Interrupted

    stop = Interrupted.of(KeyboardInterrupt(), 2)
    assert isinstance(stop, KeyboardInterrupt)
    assert (stop.signum, stop.abandoned, stop.exit_code) == (signal.SIGINT, 2, 130)
    assert stop.describe() == "interrupted (Ctrl-C); 2 running trials abandoned"
    term = Interrupted.of(Interrupted(signal.SIGTERM), 1)  # the signal is kept
    assert term.exit_code == 143 and term.describe() == ("interrupted (SIGTERM); 1 running "
                                                         "trial abandoned")
    assert pickle.loads(pickle.dumps(term)).describe() == term.describe()


def test_a_denied_access_counts_as_a_refused_write_only_where_a_write_is_known():
    """Permission denied may come from a read (a data file): only a place known to write
    calls it a refused write; elsewhere only what a write alone meets does (ENOSPC, EROFS)."""
    import errno

    from recaudit.errors import storage_error

    denied = OSError(errno.EACCES, "Permission denied", "/data/ratings.csv")
    assert storage_error(denied, writing=False) is None
    assert storage_error(denied).reason == "permission denied"
    full = OSError(errno.ENOSPC, "No space left on device", "/out/x")
    assert storage_error(full, writing=False).path == "/out/x"
