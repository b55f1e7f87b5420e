"""A task kind: pairs with a topic, its own accuracy per topic, and its own official table."""

import numpy as np

from rmbench.plugins import MetricDef, OfficialColumn, OfficialLayout, RowReader, RowSchema, Task, grouped, iter_rows


def text(value):
    return isinstance(value, str)


TOPIC_PAIRS = RowSchema("topic pairs", (("question", "text", text), ("good", "text", text),
                                        ("bad", "text", text), ("topic", "text", text)))
TOPIC_ACCURACY = MetricDef("topic_accuracy", "topic acc", True, False, "groups",
                           "share of pairs with r(good) > r(bad), strictly; subset records: "
                           "each topic; the total over all pairs")


class TopicPairs(Task):
    scores = (TOPIC_ACCURACY,)
    row_schemas = (TOPIC_PAIRS,)
    headline = ("topic_accuracy", "pairwise_accuracy", "discrimination", "specificity")
    official = OfficialLayout("Topic pairs", "topic_accuracy",
                              (OfficialColumn("Math", "math"), OfficialColumn("Chat", "chat"),
                               OfficialColumn("Score", None)),
                              beside=("discrimination",), provenance="as the plugin defines them")

    def __init__(self, path: str) -> None:
        self.path = path

    def groups(self):
        for location, line, row in iter_rows(path=self.path):
            r = RowReader(row, location, line, TOPIC_PAIRS)
            yield r.group(id=str(line), prompt=r.string("question"), utilities=(1, 0),
                          responses=(r.string("good"), r.string("bad")), subset=r.string("topic"))

    def extra_metrics(self, groups, rewards):
        r = np.asarray(rewards).reshape(-1, 2)  # each group: good, then bad
        return grouped("topic_accuracy", r[:, 0] > r[:, 1], [g.subset for g in groups])
