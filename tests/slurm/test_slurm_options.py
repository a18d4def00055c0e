"""Slurm options: validated like every configuration, from a [slurm] table or flags, and
``--dry-run`` prints the job script they make (no Slurm needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnsignal.config import ConfigError
from attnsignal.sweep import SweepSpec
from attnsignal.sweep.slurm import SlurmOptions, memory_bytes, walltime_seconds

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sweep"))
from sweep_helpers import TINY, TINY_TOML  # noqa: E402


@pytest.mark.parametrize("text, seconds", [
    ("90", 5400), ("05:30", 330), ("01:00:00", 3600), ("2-00", 172800),
    ("1-02:03", 93780), ("1-02:03:04", 93784),
])
def test_walltime_reads_every_slurm_time_format(text, seconds):
    assert walltime_seconds(text) == seconds


def test_memory_units_are_decimal_or_binary():
    assert memory_bytes("4GB") == 4 * 10**9
    assert memory_bytes("2GiB") == 2 * 2**30
    assert memory_bytes("512M") == 512 * 2**20  # Slurm's M is MiB


def test_workers_retire_before_the_walltime():
    assert SlurmOptions(walltime="01:00:00").lifetime_seconds == 3600 - 300
    assert SlurmOptions(walltime="10").lifetime_seconds == 600 - 60


@pytest.mark.parametrize("table, field", [
    ({"cores": 0}, "slurm.cores"),
    ({"jobs": True}, "slurm.jobs"),
    ({"walltime": "1:xx"}, "slurm.walltime"),
    ({"walltime": "0"}, "slurm.walltime"),
    ({"memory": "4"}, "slurm.memory"),
    ({"memory": "-1GB"}, "slurm.memory"),
    ({"partition": "a b"}, "slurm.partition"),
    ({"sbatch": "--qos=x"}, "slurm.sbatch"),
    ({"sbatch": ["qos=x"]}, "slurm.sbatch"),
    ({"sbatch": ["--qos=x\n#SBATCH --evil"]}, "slurm.sbatch"),
    ({"poll_seconds": 0}, "slurm.poll_seconds"),
    ({"queue": "debug"}, "slurm.queue"),
])
def test_bad_slurm_table_is_one_line_naming_the_field(table, field):
    with pytest.raises(ConfigError) as e:
        SweepSpec.from_dict({**TINY, "slurm": table})
    assert e.value.field == field
    assert "\n" not in str(e.value)


def test_slurm_table_is_not_part_of_what_the_sweep_computes():
    plain = SweepSpec.from_dict(TINY)
    on_slurm = SweepSpec.from_dict({**TINY, "slurm": {"partition": "short", "jobs": 4}})
    assert plain.identity() == on_slurm.identity()
    assert on_slurm.slurm_options() == SlurmOptions(partition="short", jobs=4)
    assert plain.slurm_options() == SlurmOptions()


@pytest.fixture
def cli(capsys):
    """Run the command line in this process: (exit status, stdout, stderr)."""
    from attnsignal.cli import main

    def run(*args: str) -> subprocess.CompletedProcess:
        rc = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, rc, out, err)

    return run


def test_dry_run_prints_the_job_script_from_table_and_flags(tmp_path, cli):
    pytest.importorskip("dask_jobqueue")
    spec = tmp_path / "spec.toml"
    spec.write_text(TINY_TOML + '\n[slurm]\npartition = "short"\nsbatch = ["--qos=low"]\n'
                    'cores = 4\n')
    p = cli("sweep", str(spec), "--executor", "slurm", "--dry-run", "--account", "proj",
             "--walltime", "02:00:00", "--memory", "8GB", "--sbatch=--constraint=skylake")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    for directive in ("#SBATCH -p short", "#SBATCH -A proj", "#SBATCH -t 02:00:00",
                      "#SBATCH --cpus-per-task=4", "#SBATCH --qos=low",
                      "#SBATCH --constraint=skylake"):
        assert directive in lines, (directive, p.stdout)
    worker = next(line for line in lines if "distributed.cli.dask_worker" in line)
    assert "--lifetime 6900s" in worker  # retires 5 minutes before the walltime
    assert not list(tmp_path.glob("*/")), "nothing was written"


def test_dry_run_of_the_reproduction(cli):
    pytest.importorskip("dask_jobqueue")
    p = cli("reproduce", "--executor", "slurm", "--dry-run", "--jobs", "8",
             "--cores-per-job", "2", "--partition", "debug")
    assert p.returncode == 0, p.stderr
    assert "#SBATCH -p debug" in p.stdout and "#SBATCH --cpus-per-task=2" in p.stdout


@pytest.mark.parametrize("args, message", [
    (["--walltime", "soon"], "slurm.walltime"),
    (["--cores-per-job", "0"], "slurm.cores"),
    (["--sbatch", "qos"], "slurm.sbatch"),
])
def test_bad_slurm_flags_exit_2_with_one_line(tmp_path, cli, args, message):
    spec = tmp_path / "spec.toml"
    spec.write_text(TINY_TOML)
    p = cli("sweep", str(spec), "--out", str(tmp_path / "out"), "--executor", "slurm", *args)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", [["--jobs", "2"], ["--dry-run"], ["--partition", "x"]])
def test_slurm_flags_need_the_slurm_executor(tmp_path, cli, flag):
    spec = tmp_path / "spec.toml"
    spec.write_text(TINY_TOML)
    p = cli("sweep", str(spec), "--out", str(tmp_path / "out"), *flag)
    assert p.returncode == 2 and "only with --executor slurm" in p.stderr


def test_reproduce_reads_a_slurm_table_and_flags_override_it(tmp_path, cli):
    pytest.importorskip("dask_jobqueue")
    conf = tmp_path / "slurm.toml"
    conf.write_text('[slurm]\npartition = "a"\ninterface = "lo"\nprologue = ["module load py"]\n')
    p = cli("reproduce", "--executor", "slurm", "--slurm-config", str(conf), "--partition", "b",
            "--dry-run")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "#SBATCH -p b" in lines and "module load py" in lines
    assert "--interface lo" in p.stdout
    conf.write_text("[slurm]\nqueue = 'a'\n")
    p = cli("reproduce", "--executor", "slurm", "--slurm-config", str(conf), "--dry-run")
    assert p.returncode == 2 and "slurm.queue: unknown key" in p.stderr
