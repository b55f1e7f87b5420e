"""An export format: one tab-separated file per model (``rmbench export --format tsv``), a line
per task and metric of its runs (the whole task, no shift, the first eps)."""

from pathlib import PurePosixPath

from rmbench.plugins import Export, ExportFile, ExportFormat, ExportOptions, RunFolder


def build_tsv(folders: list[RunFolder], options: ExportOptions) -> Export:
    lines: dict[str, list[str]] = {}
    for folder in folders:
        record = folder.record
        for task in record.tasks:
            for m in task.metrics:
                if m.subset is None and m.shift is None and m.eps in (None, task.eps[0]):
                    lines.setdefault(record.model.name, []).append(f"{task.name}\t{m.metric}\t{m.value!r}")
    files = tuple(ExportFile(PurePosixPath(f"{model.replace('/', '__')}.tsv"), "".join(f"{x}\n" for x in rows))
                  for model, rows in sorted(lines.items()))
    return Export(files)


TSV = ExportFormat("tsv", "one tab-separated file per model: task, metric, value", build_tsv)
