"""A train command's cvReader is made before training starts: cntk.exe creates the reader,
then the cvReader (TrainActions.cpp:119-121), before ``optimizer->Train`` runs the
pre-computing pass and epoch 1, so a cvReader whose file is not there fails before any epoch is
trained or model file written.  Before bs43 Stadyn opened it at the first validation: it
trained epoch 1, wrote ``m.0``, then failed."""

from __future__ import annotations

from stadyn.cli import main as cli_main
from bs_pass_configs import XY_INPUT, train_config


def test_a_cv_reader_without_its_file_fails_before_epoch_one(tmp_path, capsys):
    (tmp_path / "d.ctf").write_text("|x 1 |y 2\n|x 3 |y 4\n")
    reader = f'readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/d.ctf" ; {XY_INPUT}'
    text = train_config(criterion="w .* x", sgd="minibatchSize = 2 ; maxEpochs = 1 ; "
                        "learningRatesPerSample = 0.1", reader=reader,
                        cv_reader=reader.replace("d.ctf", "missing.ctf"))
    config = tmp_path / "cmd.cntk"
    config.write_text(text.replace("$OutputDir$", str(tmp_path / "out")))
    cv_line = text.splitlines().index(next(line for line in text.splitlines()
                                           if "cvReader" in line)) + 1
    assert cli_main(["train", str(config)]) != 0
    captured = capsys.readouterr()
    assert "Finished Epoch" not in captured.out
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert f"{tmp_path}/missing.ctf" in captured.err
    assert f"cmd.cntk:{cv_line}" in captured.err, captured.err
