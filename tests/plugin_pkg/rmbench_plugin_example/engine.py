"""An engine: the batches scored one after another in this process, counting what it scored."""

from rmbench.plugins import BackendOptions, Engine, MemoryRetries, score_batch


class SerialBackend:
    is_main, scores_here, device = True, True, None

    def __init__(self, options: BackendOptions) -> None:
        self.memory = MemoryRetries()
        self.scored = 0

    def run(self, model, factory, batches):  # (batch index, values), in any order
        for j, batch in enumerate(batches):
            values = score_batch(model, batch, self.memory)
            self.scored += len(batch)
            yield j, values

    def agree(self, limits):  # the batch limits every process plans with
        return limits

    def describe(self):  # results.json's execution.backend
        return {"name": "serial", "scored": self.scored}


SERIAL = Engine(build=SerialBackend)
