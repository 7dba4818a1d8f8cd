"""Package lists from setup scripts (issue 25, item 8): `pip install -r FILE` (found within the
side), `-r`/`-c` inside requirements files, `pip install pkg==v` lines and `conda env create -f
FILE` are read as the package lists they install and compared by the libraries check; a
requirements file is recognised by its content, not only by a first pinned line
(lang/shell/install.py, scriptdiff/ruleset/packages.py, rules/shell.yaml `installers:`)."""
from __future__ import annotations

import pytest
from conftest import rows_by_file, write_files

from scriptdiff.checks.libraries import looks_like_package_list, parse_requirements
from scriptdiff.model import Options
from scriptdiff.ruleset.packages import is_requirement_list
from scriptdiff.run.pipeline import diff_files
from scriptdiff.ruleset.registry import detect_kind
from scriptdiff.inputs.sources import Source


write = write_files


rows = rows_by_file


def diff(tmp_path, name: str):
    return diff_files([str(tmp_path / "gpu" / name)], [str(tmp_path / "npu" / name)], Options(use_cache=False))


SETUP = """#!/bin/bash
conda create -n llm python=3.10 -y
conda activate llm
pip install -r requirements_{side}.txt
"""
REQS = "# core libraries\naccelerate\ntorch=={torch}\ntransformers==4.40.0\n"


def test_setup_script_installs_the_lists_it_names(tmp_path):
    """The issue's reproduction: it exited 0 "only environment exports were read" although the
    requirements files it installs pin different torch releases."""
    write(tmp_path, {"gpu/setup_env.sh": SETUP.format(side="gpu"), "npu/setup_env.sh": SETUP.format(side="npu"),
                     "gpu/requirements_gpu.txt": REQS.format(torch="2.1.0"),
                     "npu/requirements_npu.txt": REQS.format(torch="2.2.0")})
    rep = diff(tmp_path, "setup_env.sh")
    assert rows(rep) == [("SD401", "pkg:torch", "2.1.0", "2.2.0", "requirements_gpu.txt", 3, "requirements_npu.txt", 3)]
    assert rep.errors == [] and rep.exit_code() == 1
    assert [(a.status, a.unread) for a in rep.inputs] == [("understood", [])] * 2


def test_setup_script_faithful_negative(tmp_path):
    write(tmp_path, {"gpu/setup_env.sh": SETUP.format(side="gpu"), "npu/setup_env.sh": SETUP.format(side="npu"),
                     "gpu/requirements_gpu.txt": REQS.format(torch="2.1.0"),
                     "npu/requirements_npu.txt": REQS.format(torch="2.1.0")})
    rep = diff(tmp_path, "setup_env.sh")
    assert rep.findings == [] and rep.errors == [] and rep.exit_code() == 0


INLINE = """conda create -n llm python={py} numpy=1.26 -y
conda env create -f environment_{side}.yml
python -m pip install transformers=={tf} --index-url https://pypi.org/simple
uv pip install "peft>=0.10; python_version >= '3.8'"
pip3 install -e git+https://github.com/org/lib.git@{rev}#egg=lib
pip install .
"""
ENV_YML = "name: x\nchannels: [defaults]\ndependencies:\n  - pytorch=2.1.0\n  - pip:\n    - accelerate=={acc}\n"


def test_install_lines_and_conda_environment_files(tmp_path):
    write(tmp_path, {"gpu/setup.sh": INLINE.format(py="3.10", side="gpu", tf="4.40.0", rev="aaaa111"),
                     "npu/setup.sh": INLINE.format(py="3.11", side="npu", tf="4.38.2", rev="bbbb222"),
                     "gpu/environment_gpu.yml": ENV_YML.format(acc="0.30.0"),
                     "npu/environment_npu.yml": ENV_YML.format(acc="0.31.0")})
    rep = diff(tmp_path, "setup.sh")
    assert rows(rep) == [
        ("SD315", "version:python", "3.10", "3.11", "setup.sh", 1, "setup.sh", 1),
        ("SD401", "pkg:accelerate", "0.30.0", "0.31.0", "environment_gpu.yml", 6, "environment_npu.yml", 6),
        ("SD401", "pkg:transformers", "4.40.0", "4.38.2", "setup.sh", 3, "setup.sh", 3),
        ("SD403", "pkg:lib", "git+https://github.com/org/lib.git@aaaa111", "git+https://github.com/org/lib.git@bbbb222",
         "setup.sh", 5, "setup.sh", 5)]
    assert rep.exit_code() == 1


def test_install_lines_faithful_negative(tmp_path):
    text = INLINE.format(py="3.10", side="x", tf="4.40.0", rev="aaaa111")
    write(tmp_path, {"gpu/setup.sh": text, "npu/setup.sh": text.replace("python_version >= '3.8'", "python_version>='3.8'"),
                     "gpu/environment_x.yml": ENV_YML.format(acc="0.30.0"),
                     "npu/environment_x.yml": ENV_YML.format(acc="0.30.0")})
    rep = diff(tmp_path, "setup.sh")
    assert rep.findings == [] and rep.errors == [] and rep.exit_code() == 0


def test_requirements_and_constraints_inside_a_requirements_file(tmp_path):
    """`-r base.txt` is installed too; `-c constraints.txt` pins what is installed (torch) and
    installs nothing else (scipy is in no list)."""
    main = "-r base.txt\n-c constraints.txt\ntorch\n"
    write(tmp_path, {"gpu/requirements.txt": main, "npu/requirements.txt": main,
                     "gpu/base.txt": "numpy==1.26.4\n", "npu/base.txt": "numpy==1.24.0\n",
                     "gpu/constraints.txt": "torch==2.1.0\nscipy==1.11.0\n",
                     "npu/constraints.txt": "torch==2.2.0\nscipy==1.12.0\n"})
    rep = diff(tmp_path, "requirements.txt")
    assert rows(rep) == [("SD401", "pkg:numpy", "1.26.4", "1.24.0", "base.txt", 1, "base.txt", 1),
                         ("SD401", "pkg:torch", "2.1.0", "2.2.0", "constraints.txt", 1, "constraints.txt", 1)]
    write(tmp_path, {"npu/base.txt": "numpy==1.26.4\n", "npu/constraints.txt": "torch==2.1.0\nscipy==1.12.0\n"})
    assert diff(tmp_path, "requirements.txt").findings == []  # the faithful port: silent


def test_requirements_file_missing_on_one_side(tmp_path):
    write(tmp_path, {"gpu/setup.sh": "pip install -r req.txt\npip install peft==0.10.0\n",
                     "npu/setup.sh": "pip install -r req.txt\npip install peft==0.10.0\n",
                     "gpu/req.txt": "torch==2.1.0\n"})
    rep = diff(tmp_path, "setup.sh")
    assert [(r[0], r[1], r[6], r[7]) for r in rows(rep)] == [
        ("SD154", "reference:requirement", "setup.sh", 1)]  # said once: no SD222 beside it
    said = next(f for f in rep.findings if f.rule == "SD154")
    assert said.check == "libraries" and said.message.endswith(
        "1 setting(s) of the GPU side could not be compared: pkg:torch")


@pytest.mark.parametrize("text", [
    "# pinned for the GPU cluster\ntorch=={v}\nnumpy==1.26.4\n",  # a comment first
    "accelerate\ntorch=={v}\n",  # an unpinned name first
    "--index-url https://download.pytorch.org/whl/cu121\ntorch=={v}\n",
    "-e git+https://github.com/org/lib.git@abc#egg=lib\ntorch=={v}\n",
    "git+https://github.com/org/lib.git@abc#egg=lib\ntorch=={v}\n",
    "torch=={v} ; python_version >= \"3.8\"\nnumpy\n",
    "torch=={v} \\\n    --hash=sha256:0123456789abcdef\n",
])
def test_requirements_recognised_by_content(tmp_path, text):
    """A requirements file under any name (deps_gpu.txt) is a package list when its lines say so:
    a torch change is SD401, not "lines differ"."""
    write(tmp_path, {"gpu/deps.txt": text.format(v="2.1.0"), "npu/deps.txt": text.format(v="2.2.0")})
    assert detect_kind(Source(name="deps.txt", data=text.format(v="2.1.0").encode())) == "requirements"
    rep = diff(tmp_path, "deps.txt")
    assert [(r[0], r[1], r[2], r[3]) for r in rows(rep)] == [("SD401", "pkg:torch", "2.1.0", "2.2.0")]


@pytest.mark.parametrize("text", ["train\nvalid\ntest\n", "hello world\n", "data/a.json\ndata/b.json\n",
                                  "# notes\nrun it twice\n", "--lr 1e-4\n"])
def test_other_text_is_not_a_requirements_file(text):
    assert not is_requirement_list(text) and not looks_like_package_list(text, "notes.txt")
    assert detect_kind(Source(name="notes.txt", data=text.encode())) == "text"


def test_requirement_file_references_are_collected():
    refs: list = []
    entries, problems, _ = parse_requirements("-r base.txt\n--requirement=extra.txt\n-cpins.txt\ntorch==2.1\n", refs)
    assert refs == [("base.txt", 1, "requirement"), ("extra.txt", 2, "requirement"), ("pins.txt", 3, "constraint")]
    assert [(e.name, e.version) for e in entries] == [("torch", "2.1")] and problems == []
