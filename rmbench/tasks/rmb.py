"""RMB (Zhou et al., "RMB: Comprehensively Benchmarking Reward Models in LLM Alignment", ICLR 2025,
arXiv 2410.09893; ``Zhou-Zoey/RMB-Reward-Model-Benchmark``) with its official accuracies.

Data, as published: the JSON files of the GitHub repository's ``RMB_dataset/`` at commit
``2be3180`` (:data:`RMB_COMMIT`), one file per scenario: ``Pairwise_set/<goal>/...json`` (49
files) and ``BoN_set/<goal>/...json`` (49), the goals (RMB's top-level categories) being
``Helpfulness`` (37 scenarios in 12 groups: ``Helpfulness/Code/Documentation``) and
``Harmlessness`` (``S1`` ... ``S11`` and ``multi``). Each file is one JSON array of items:

* pairwise: ``pair_uid``, ``conversation_input`` (the conversation so far: a list of
  ``{role, content, language}`` messages, ending with the user's turn), ``chosen`` and
  ``reject`` (each ``{llm_name, answer}``), ``category_path`` (``Pairwise_set/Helpfulness/Code/
  Documentation``, the scenario);
* Best-of-N: ``bon_uid``, ``conversation_input``, ``bon_best`` (``{llm_name, answer}``),
  ``loser_list`` (2 to 6 such objects), ``category_path`` (``BoN_set/...``).

Where it comes from: each file by URL and checksum at that commit (:data:`RMB_FILES`, the
entry's ``paths``), downloaded once into the download cache, verified, and read; ``RMBENCH_MIRROR``
serves them to an offline machine (:mod:`rmbench.tasks.downloads`). 95 files are pinned by
sha256. Three (``Pairwise_set/Harmlessness/S11``, ``.../Brainstorming/Idea Development``,
``.../Generation/Creative Writing``, each over 4 MiB) could not be had when this task was written,
so they are pinned by their git blob id in the commit's tree (:data:`RMB_GIT_BLOBS`, ``URL#git-blob-
sha1=HEX``: sha1 of ``"blob <size>\\0" + bytes``, what the pinned commit itself records):
downloaded the same way (the mirror too), checked against that id before they are cached
(``downloads/git-blob-sha1-HEX/``). Or ``path`` (``--data rmb=PATH``): a local folder that holds
RMB's tree (the repository, its ``RMB_dataset/``, or any part of it: every ``*.json`` under it),
one of its JSON files, or ``URL#sha256=HEX``.

Arguments: ``set`` (``both``, the default: both sets, so the total is the paper's Overall;
``pairwise`` or ``bon``: one set) and ``category`` (``Helpfulness`` or ``Harmlessness``: one
goal; default both). A folder's files that its path puts in another set or goal
(``Pairwise_set``, ``BoN_set``, ``Helpfulness``, ``Harmlessness`` folders) are not read; an item
is kept by its own ``category_path``.

Groups. A pairwise item is the group [chosen, reject] with utilities (1, 0); a BoN item is
[bon_best, *loser_list] with utilities (1, 0, ..., 0) and ``equivalence_levels=()``: RMB ranks
the best answer above each loser and never declares two losers equal, so they form no
specificity pairs (as RewardBench 2's best-of-n rows). The prompt is the whole
``conversation_input`` as chat messages (every turn reaches the chat template; never flattened).
Id ``pairwise:<pair_uid>`` / ``bon:<bon_uid>`` (the two sets number their items apart), subset =
``category_path`` (the scenario), meta: the uid, ``category`` (the goal), ``set`` and the answers'
``llm_names``. An item whose answers are the same text (11 pairs and 28 BoN items of the
published data) is kept: no reward model gets it right, as in RMB.

The official score ``rmb_score`` (:mod:`rmbench.core.rmb`, which says what of RMB's code it
follows): an item is correct iff r(best) is strictly above every other answer's reward
(pairwise: r(chosen) > r(reject), ``my_run_rm.py``'s ``1 if chosen > rejected else 0``; BoN: above
every loser; a reward tie is not correct); accuracy per scenario over its items, per section
(set and goal, the paper's four columns) over the items of all its scenarios, and the total is
the mean of the sections present. rmbench's own ``pairwise_accuracy`` beside it counts a tie 1/2
and a BoN item once per loser.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE
from rmbench.core.rmb import (
    RMB_GOALS,
    RMB_LAYOUT,
    RMB_METRIC,
    RMB_SECTIONS,
    RMB_SETS,
    best_beats_all,
    rmb_accuracies,
    section_of_path,
)
from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.paths import user_cache_dir
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.downloads import _download, is_web_source, source_url
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import RMB_BON, RMB_PAIRWISE
from rmbench.tasks.sources import iter_rows

RMB_REPOSITORY = "Zhou-Zoey/RMB-Reward-Model-Benchmark"
RMB_COMMIT = "2be3180857f2190b7ffa929d43190835627f1f4d"
_RAW = f"https://raw.githubusercontent.com/{RMB_REPOSITORY}/{RMB_COMMIT}/RMB_dataset/"

_SHA256 = {
    "Pairwise_set/Harmlessness/S1": "032f19ad3729d86ec167b2c3eb86ec422d3f2377579aa746b0455472bd995080",
    "Pairwise_set/Harmlessness/S10": "c1fa5f90d8657eb07dcdfc912a442861f3b15a1dbace9a41445bda3c0cccde56",
    "Pairwise_set/Harmlessness/S2": "dbf3c3ac79a63e7c52be78545353c55d16fa5928590fef6762c271e6af062517",
    "Pairwise_set/Harmlessness/S3": "006d68eb804823f3f08998767d9bf2c53200d1814f86a0fd94daf4ccc8b3f123",
    "Pairwise_set/Harmlessness/S4": "ea1c062b1f6718ac89bac2cedc13c2e703e43b9bf1bc63fa34570759dbd826bc",
    "Pairwise_set/Harmlessness/S5": "33047604a901e79bddfda7ec2df173c2ebf0afec112c4a05dd88a0d04f9bf35d",
    "Pairwise_set/Harmlessness/S6": "2a2e08618a33bc22ca4bad776f1dda9840a4c88dc7240104429b0bb77a2ef6a5",
    "Pairwise_set/Harmlessness/S7": "ac09c9cfde7149c39c9dcb86c7f76d4ab6a36cb4fb94bb9542683f4714efca02",
    "Pairwise_set/Harmlessness/S8": "0b44f9249a51d6e0d3bc947e866a14bff956aa98bc63118b6430be6f9bee579d",
    "Pairwise_set/Harmlessness/S9": "e2e207eeb9b60a6f62cb2b130761ff27b37b1512cc86d3c8a933ccd9b9bf9f74",
    "Pairwise_set/Harmlessness/multi": "84c88c81f9ca3810b80af372df51de844c25c898490b9707067a28b1e03177ba",
    "Pairwise_set/Helpfulness/Brainstorming/Problem Solving":
        "e6416e15e6c978d54510333ce681ec36f33777b4d79877c5b9e81ff49ade560c",
    "Pairwise_set/Helpfulness/Chat/Casual Conversation":
        "8845fa20aaf93f786d591873a47b9e8b9972147f65a829e7c30298e0ae0c871a",
    "Pairwise_set/Helpfulness/Chat/Discussion": "9c750d2ac66b1f80af78b341705526838736b446219afeaf83884e5b346861b2",
    "Pairwise_set/Helpfulness/Chat/Supportive Conversation":
        "2b3d024c4f17454b6f34a9de30bd437191826fc66d60cc08d2bc23de9961d8c9",
    "Pairwise_set/Helpfulness/Classification/Content Categorization":
        "fbb360d6fcdc93511ef34042e586e7caee16530f11f055214e24d55e8daf2d0d",
    "Pairwise_set/Helpfulness/Classification/Quality and Compliance Assessment":
        "ce511eac5cd23383b2af4c5657a0195d5c1acece7cbb112e6daa218c7192c701",
    "Pairwise_set/Helpfulness/Closed QA/ContextBased":
        "c3fe6e95b4cf0a867bc42f07a6ac9648e9793255820b5697a98a3480a168900f",
    "Pairwise_set/Helpfulness/Closed QA/OptionBased":
        "93d9bf400440b78416d283de0e7c833b2f4a320e7ff496b41836c4c72412eb37",
    "Pairwise_set/Helpfulness/Code/Data Management": "9cc7547ff8c16ad2fb144bc017568bb3ad9ad06731a48446e8e70cd431d4bbd2",
    "Pairwise_set/Helpfulness/Code/Development and Implementation":
        "e038109c78130de3e0bc79275b22b8b528b0c33868d49ba376715cdcc4535596",
    "Pairwise_set/Helpfulness/Code/Documentation": "817bcd0d478c9ff714c0011b92ab0a28f2c729d31aaad1d7c5e676ece656eb78",
    "Pairwise_set/Helpfulness/Code/Quality and Optimization":
        "28b0ddf70a2dcde61102ca29c0e734f70928501940026677c4ad9cb6a757039d",
    "Pairwise_set/Helpfulness/Generation/Professional Content Generation":
        "2fac46e67ef8a2bb4b9798482e38d65d63f939a266d5344aac250ee1a043dd8a",
    "Pairwise_set/Helpfulness/Open QA/Factual": "d6345a4f155fe1e42373f0cc7df322f7c53f9383d52ce523e5d1877d58983426",
    "Pairwise_set/Helpfulness/Open QA/General Explanation":
        "35a802d86cb2b9b1ddb51c8f470cb0b9206c73cc41a422457a1d640ee8a2934f",
    "Pairwise_set/Helpfulness/Open QA/Hypothetical Scenarios":
        "372103346a3f33d7865d2895fbe7db2600a1a7a83d4f7dde68b5796c8755834c",
    "Pairwise_set/Helpfulness/Open QA/Interpretative Analysis":
        "0d2cf293676e0e510332caebaf5b4139e6b52081e919605c549436020bbe08ee",
    "Pairwise_set/Helpfulness/Open QA/Personal Opinion and Advice":
        "d2f4a85993fa433956dcacbb61559465f1d92402dd007fb03df9bba555d0813b",
    "Pairwise_set/Helpfulness/Open QA/Technical and Practical Support":
        "90f3de28522fd0c34a9e9e3f59bca8c8dfbb822d1f749b94aeb2458bd9118ffe",
    "Pairwise_set/Helpfulness/Reasoning/Analytical Reasoning":
        "17f69653ea4a7b3022ca5732f30d66b86a6334d64778dd3a55c5f82079cc93be",
    "Pairwise_set/Helpfulness/Reasoning/Critical Thinking":
        "fed5aed85019e563b2df4d3e6e89647f27de04f8b0b72fc0f7b556714324440a",
    "Pairwise_set/Helpfulness/Reasoning/Human Decision Making":
        "4ab1e6a5f30e36267e844e22d466f4d25800ffbe6649ab94d36299b23adb1f9b",
    "Pairwise_set/Helpfulness/Reasoning/Logical Deduction":
        "62eedf90b698609ad9466fb93269d42cb4c5f2bf816da349afa66ffce89a8d78",
    "Pairwise_set/Helpfulness/Reasoning/Pattern Recognition":
        "bf866f0bf748adadbdd3df79db86f8d0d8034a9c285209d2c0c1c0724a13ceb3",
    "Pairwise_set/Helpfulness/Rewrite/Paraphrasing": "7de5954fc3c227c488321252c5ca4c9b19200a6d4cb697f7e342475dd4db07fa",
    "Pairwise_set/Helpfulness/Rewrite/PostQuality Assessment Rewriting":
        "19e1484d2da0e590db8057fa58a50ce80ba68c185572919451551b2682d8cb05",
    "Pairwise_set/Helpfulness/Rewrite/Textual ExpansionReduction":
        "d172f0a026291cfab407d8289aa258f03ae1abff72b394d4af61ea5bbf1cef82",
    "Pairwise_set/Helpfulness/Rewrite/Tone Adjustment":
        "4316594272d4d5d83a272eeebce19b4318322cb29caaa6983fe1c44d57fa3915",
    "Pairwise_set/Helpfulness/Role Playing/General Character":
        "1be349e066b6442302080d5fea5a179bb11fb703c3dea0a1ebd5c682533e2e10",
    "Pairwise_set/Helpfulness/Role Playing/Specific Character":
        "e4bea240a0277727ba4c5b83096405abd29fcaf911ea8b79221d32e1c3dc14ac",
    "Pairwise_set/Helpfulness/Summarization/Specialized Summaries":
        "9810fe2de4ba88bac2f82bc8b62b2dff6e8f0f8079aae075ab0d050e8d34656b",
    "Pairwise_set/Helpfulness/Summarization/Standard Summaries":
        "79e8985b4a066e59c38716a25ae24e45dcd9612d7cc501fdf51941b619471411",
    "Pairwise_set/Helpfulness/Translation/GeneralExcerpt Language Translation":
        "d930d2dad11e9f769dc36118deb8f636f22d38350dcdd690584170e5bdc150ec",
    "Pairwise_set/Helpfulness/Translation/Literary and Cultural Translation":
        "e5cff28b5d0745d0fdc328eedf21581b799881cd127fd338c3eb60dde9a9d7ff",
    "Pairwise_set/Helpfulness/Translation/Technical and Scientific Translation":
        "97f20f59c5ef080acdd4294e32edc9330af66aad9ecde9c9ac9b1e9bde100d97",
    "BoN_set/Harmlessness/S1": "3760aa892d6b9c974c8c036709eea158625e00f70c3fd9557258e56daac94dde",
    "BoN_set/Harmlessness/S10": "33b3b993f9054feea9ad7977db85ecf6a057fc854872673afbe1e60922f39f11",
    "BoN_set/Harmlessness/S11": "da197e3931bd53802db02357fb95c06ceee559fe0a0d6d08f395ad15b94ec47f",
    "BoN_set/Harmlessness/S2": "b35ef470873aa84cfccb3626a165bbae9ba3072f87d59bafa524f41908059928",
    "BoN_set/Harmlessness/S3": "16bc8087dd1f67dc319f1a6b8e3981707fc9909826b215d8a61293ad0919eb68",
    "BoN_set/Harmlessness/S4": "0e732b9276167594a0e582f6255cacffd7e8aaa5b245c72eb7cd7c8387f53a31",
    "BoN_set/Harmlessness/S5": "931c6ec522ce4afb378cadad804b4535ea0c4da3bd70107879fbec5da086580e",
    "BoN_set/Harmlessness/S6": "4b029148be47c674c8efc8c3da4ad113bc0ddfb519b6a94ebb7889b5e1a9d788",
    "BoN_set/Harmlessness/S7": "d67fbd356ea6ee158562f976ea8f1716b5a2e08d2f8551e3fa05530b7f784068",
    "BoN_set/Harmlessness/S8": "308cb588ac69036028d1484c25934384531ee625f7d96359295a6459ab85a5ae",
    "BoN_set/Harmlessness/S9": "d04f2cdf28b2275dee834cd1ad3579aeb477b72d12fc13b9f0e6a27951d3a0e5",
    "BoN_set/Harmlessness/multi": "1250b6edd86c548e55ef58d3a3c8a058d44e8b870db181f4a73b2775c52fc257",
    "BoN_set/Helpfulness/Brainstorming/Idea Development":
        "b5249468727b70b3c9eabcf45d96869e894f90e0aa3a1589a333bceed8e9b4ab",
    "BoN_set/Helpfulness/Brainstorming/Problem Solving":
        "30e920627baaf06b30e478ac11abdff1072be03670b2beec4f85c7eac7ef58ba",
    "BoN_set/Helpfulness/Chat/Casual Conversation": "e105afd64c1d88cfc38fd1392718555ff58bf494b7296d7a600d40da4715c29d",
    "BoN_set/Helpfulness/Chat/Discussion": "bc71f9a48e5a666b2893f3817a0aeae15f36603d926eaefbc3967400355a17a2",
    "BoN_set/Helpfulness/Chat/Supportive Conversation":
        "781d3523b00f74d6c64ef4b6216f0be18720d4cac96c986e91f0719c0547ecdb",
    "BoN_set/Helpfulness/Classification/Content Categorization":
        "9e4122256aafd42bd868c124b9d6338ae076e0b9f2eb4d37eb93c32479cd5d6e",
    "BoN_set/Helpfulness/Classification/Quality and Compliance Assessment":
        "cded040a2bca89ff5f6c664ea69888769107c103d87a0bc2ea9faf30fa95104d",
    "BoN_set/Helpfulness/Closed QA/ContextBased": "25e17bab373b53cd19da1c32777f67faacbaad2c1b224cdc1c8250dab5c12f95",
    "BoN_set/Helpfulness/Closed QA/OptionBased": "b78fd6f8d7de1d77f54edd14ea9e7a57ab53726a4218719e998ed49e09a7a8f9",
    "BoN_set/Helpfulness/Code/Data Management": "c11cd4bc20bc9be5be5ce3b5f5e860bf9483bb211783d90cf224d5dc110feb8b",
    "BoN_set/Helpfulness/Code/Development and Implementation":
        "bfbe6cd755d00aee8824a4363eff5c1bb9d6848245cf8badf309c23ad6d6af5f",
    "BoN_set/Helpfulness/Code/Documentation": "30c9106f854f9b44cdcb33393bc78f6bdc429c2bd6cb38cc116786ba212cdb87",
    "BoN_set/Helpfulness/Code/Quality and Optimization":
        "bc7774bebeb7d7101575e2dbec38eb8d7408f7027c1733a6db5c50555bd0a108",
    "BoN_set/Helpfulness/Generation/Creative Writing":
        "f8fddf0b1ddeab29ec3f4bd7cd72fdd0a264a70bce32c4b19a0e8c23d4d03f43",
    "BoN_set/Helpfulness/Generation/Professional Content Generation":
        "d7938246a8706ec60e80ca646602bd0dc014edb4b54e2202784e690f8e620cdb",
    "BoN_set/Helpfulness/Open QA/Factual": "f916d15283372d2c5ff06f87cd528d251e2a9c75c0fed9fa513dff941dde8f51",
    "BoN_set/Helpfulness/Open QA/General Explanation":
        "53e582fdc06d5fb6d38aa80096c53adb231aa73b53c090e19a3b3a981c2705a5",
    "BoN_set/Helpfulness/Open QA/Hypothetical Scenarios":
        "1aecce6ded836b7c7c519d64ea18aa46ace00e85993369ac1c578904e9bdecd5",
    "BoN_set/Helpfulness/Open QA/Interpretative Analysis":
        "c9fc7049e93ffb6d189f8fb9f7eadd3cd1c4a20eea690935601246cbb162c72b",
    "BoN_set/Helpfulness/Open QA/Personal Opinion and Advice":
        "685372813fc853400d76a04f2bb5b9470130d100c2307bb0644c8edbf03adfd4",
    "BoN_set/Helpfulness/Open QA/Technical and Practical Support":
        "a6654795e446d3f0092d8bbfe176bfde303406f5e8c10cbb8cfcd7112c7498c1",
    "BoN_set/Helpfulness/Reasoning/Analytical Reasoning":
        "2ba50582d6a8c9498eb78826cc1bc038ef3f504079951115b7be1c7e00b1f639",
    "BoN_set/Helpfulness/Reasoning/Critical Thinking":
        "221ca3b9b6672bd7f4966e6a19b4d32fe8f60ae9cb9a9399012242d08e7487d0",
    "BoN_set/Helpfulness/Reasoning/Human Decision Making":
        "f9f702a90835c07934b0fd88077756dc44aee34a00332bf5309cd818a2518c63",
    "BoN_set/Helpfulness/Reasoning/Logical Deduction":
        "324ac38368d133d7fb693a4a77217ff73a11d21e122e4ef976be162e2d67d45c",
    "BoN_set/Helpfulness/Reasoning/Pattern Recognition":
        "6b51079928e8b2ccd2ad3e8ca308461f3e644a602b4c2a4a39c6cde1363f36f8",
    "BoN_set/Helpfulness/Rewrite/Paraphrasing": "54c335a7fd14cd3b75efffcce08215de4686c961ade500673897488a61b6903c",
    "BoN_set/Helpfulness/Rewrite/PostQuality Assessment Rewriting":
        "0201583a6dee10f0a0b4260516133fc57b91c0df7070c38dfd51db66b36e4550",
    "BoN_set/Helpfulness/Rewrite/Textual ExpansionReduction":
        "7846d7cc19a716d689ab897ab6a401c9ff94871d2ef91b9bff7e818a22d73af4",
    "BoN_set/Helpfulness/Rewrite/Tone Adjustment": "953d8d15a41172e84e9d4cc5fcb0d7df6297e16998196c83054e4c1356523afc",
    "BoN_set/Helpfulness/Role Playing/General Character":
        "9856722dcd0b09da836f3150b118aacd17bca9d70dfedfa30db772da764d1146",
    "BoN_set/Helpfulness/Role Playing/Specific Character":
        "e125fe326a1545e843cb091d6e79da7acbe2e2c030182e83ab5c72f40f0973eb",
    "BoN_set/Helpfulness/Summarization/Specialized Summaries":
        "8b055d8a742cffcbdbe9203d263e5b47613b28f0a3f60804c26c10879e1fce3b",
    "BoN_set/Helpfulness/Summarization/Standard Summaries":
        "0c8ee92cfe4463aba60ac109360fd1fd0c10cf7416189998216030bb985b44fc",
    "BoN_set/Helpfulness/Translation/GeneralExcerpt Language Translation":
        "40b415ae48bc114389801040898c532653f42bab13697275a52d880787b6a292",
    "BoN_set/Helpfulness/Translation/Literary and Cultural Translation":
        "dd766794b73cf3d92d8dd58cf6fc64fe9b9cab64b5e10bc0860253ca71658ada",
    "BoN_set/Helpfulness/Translation/Technical and Scientific Translation":
        "742b68ef4f2fbc0d229f96c8030416cdc7ebd19da769d66b96ab92042bcecf18",
}
"""Scenario (``category_path``) -> sha256 of its file at RMB_COMMIT (95 of the 98 files)."""

_GIT_BLOBS = {
    "Pairwise_set/Harmlessness/S11": "4b3d655d2bfb98c5af709227bb6c4102b78d0d5f",
    "Pairwise_set/Helpfulness/Brainstorming/Idea Development": "7b3f42e67d9ec03e3d71c68b1b04588a5da01362",
    "Pairwise_set/Helpfulness/Generation/Creative Writing": "21ce08d813422c1b78c7c1777f93063bc2b4c43d",
}
"""The three files over 4 MiB whose bytes were not at hand: scenario -> git blob id in RMB_COMMIT's tree."""


def rmb_url(scenario: str) -> str:
    """The raw URL of a scenario's file at RMB_COMMIT (spaces and the like percent-encoded)."""
    return f"{_RAW}{urllib.parse.quote(scenario)}.json"


RMB_FILES = {scenario: f"{rmb_url(scenario)}#sha256={sha}" for scenario, sha in _SHA256.items()}
"""Scenario -> ``URL#sha256=HEX``: what the entry's ``paths`` holds."""
RMB_GIT_BLOBS = {scenario: f"{rmb_url(scenario)}#git-blob-sha1={blob}" for scenario, blob in _GIT_BLOBS.items()}
"""Scenario -> ``URL#git-blob-sha1=HEX`` for the files pinned by git blob id (module doc)."""
SETS = ("both", "pairwise", "bon")
_GIT_BLOB = re.compile(r"git-blob-sha1=([0-9a-f]{40})")
_SET_FIELDS = {"pairwise": ("pair_uid", "chosen", "reject"), "bon": ("bon_uid", "bon_best", "loser_list")}


# --- files pinned by git blob id -------------------------------------------------------------

def parse_git_blob(text: str) -> tuple[str, str]:
    """``URL#git-blob-sha1=HEX`` -> (URL, HEX); anything else is a :class:`DataError`."""
    url, _, fragment = str(text).partition("#")
    match = _GIT_BLOB.fullmatch(fragment.strip().lower())
    if not is_web_source(url) or match is None:
        raise DataError("a file pinned by its git blob id is written URL#git-blob-sha1=<40 hex digits>", path=url)
    return url, match.group(1)


def git_blob_id(path: Path) -> str:
    """The id git gives a file's bytes: sha1 of ``b"blob <size>\\0"`` followed by them."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def git_blob_cached_path(url: str, blob: str) -> Path:
    return user_cache_dir() / "downloads" / f"git-blob-sha1-{blob}" / (Path(urllib.parse.urlparse(url).path).name
                                                                       or "download")


def fetch_git_blob(url: str, blob: str) -> Path:
    """The local, verified copy of the file at ``url`` whose git blob id is ``blob``: from the
    cache, or downloaded now (through ``RMBENCH_MIRROR`` when set, as every web file), checked, and
    only then cached. Another id is an error and nothing is kept."""
    dest = git_blob_cached_path(url, blob)
    if dest.is_file():
        return dest
    source = source_url(url)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the download cache {dest.parent}: {exc.strerror or exc}", path=url) from None
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        _, size = _download(source, part, dest.name)
        got = git_blob_id(part)
        if got != blob:
            raise DataError(f"the downloaded file (from {source}, {size} bytes) has git blob id {got}, not the "
                            f"declared {blob} of RMB's commit {RMB_COMMIT[:7]}; it was not kept. The source changed "
                            f"or the mirror serves another file", path=url)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest


# --- the task ---------------------------------------------------------------------------------

def _choice(value: Any, choices: Sequence[str], what: str) -> str:
    if isinstance(value, str):
        for c in choices:
            if value.strip().lower() == c.lower():
                return c
    raise ValueError(f"{what} {value!r}: use {', '.join(choices[:-1])} or {choices[-1]}")


def _section_of_key(key: str) -> str:
    section = section_of_path(str(key))
    if section not in RMB_SECTIONS or len(str(key).split("/")) < 3:
        raise ValueError(f"paths key {key!r}: name each file by its scenario, SET/GOAL/..., e.g. "
                         f"Pairwise_set/Helpfulness/Code/Documentation")
    return section


RMB_SCORE = MetricDef(
    "rmb_score", "RMB", True, False, Counted.GROUPS,
    "RMB's official accuracy (its eval/scripts/my_run_rm.py; BoN and the total as RM-R1's RMB scripts): "
    "an item is correct iff r(best) > r(every other answer), strictly (pairwise: r(chosen) > r(reject); "
    "BoN: above every loser; a tie is not correct); subset records: each scenario (its category_path) "
    "over its items, each section (Pairwise_set/GOAL, BoN_set/GOAL) over its items; the total = the mean "
    "of the sections present (both sets and goals: the paper's Overall)", official=True)


class RMBTask(Task):
    """RMB's pairwise and Best-of-N items (``conversation_input``, ``chosen``/``reject`` or
    ``bon_best``/``loser_list``, ``category_path``) with RMB's official accuracies (module doc)."""

    description = ("RMB: pairwise and Best-of-N items over 49 scenarios (helpfulness, harmlessness), "
                   "conversations kept; official accuracy per scenario, per set and goal, overall")
    headline = (RMB_METRIC,) + DEFAULT_HEADLINE
    official = RMB_LAYOUT
    scores = (RMB_SCORE,)
    row_schemas = (RMB_PAIRWISE, RMB_BON)
    version = 1

    def __init__(self, set: str = "both", category: str | None = None, path: str | None = None,  # noqa: A002
                 paths: Mapping[str, str] | None = None, git_blobs: Mapping[str, str] | None = None) -> None:
        chosen_set = _choice(set, SETS, "set")
        self.category = None if category is None else _choice(category, RMB_GOALS, "category")
        self.sets = ("pairwise", "bon") if chosen_set == "both" else (chosen_set,)
        goals = RMB_GOALS if self.category is None else (self.category,)
        self.sections = tuple(s for s in RMB_SECTIONS
                              if s.split("/")[0] in {RMB_SETS[k] for k in self.sets} and s.split("/")[1] in goals)
        if path is not None and not isinstance(path, str):
            raise ValueError(f"path must be a file, a folder or URL#sha256=HEX, got {path!r}")
        self.path = path
        files = {**dict(RMB_GIT_BLOBS if git_blobs is None else git_blobs),
                 **dict(RMB_FILES if paths is None else paths)}  # a key in both: its paths entry
        for key in files:
            _section_of_key(key)
        self.files = {k: files[k] for k in sorted(files, key=lambda k: (not k.startswith("Pairwise_set/"), k))}
        """Scenario -> source, pairwise first, each set's in path order."""

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: dict[str, set] = {"pairwise": set(), "bon": set()}
        elsewhere: dict[str, int] = {}
        kept = 0
        for location, line, row in self._rows():
            kind = "bon" if any(k in row for k in ("bon_best", "loser_list", "bon_uid")) else "pairwise"
            r = RowReader(row, location, line, RMB_BON if kind == "bon" else RMB_PAIRWISE)
            with r.skippable():
                uid_field, best_field, other_field = _SET_FIELDS[kind]
                category_path = r.string("category_path")
                parts = category_path.split("/")
                if len(parts) < 3 or not all(parts) or parts[0] not in RMB_SETS.values() or parts[1] not in RMB_GOALS:
                    raise r.error("category_path", f"is {category_path!r}; RMB's is SET/GOAL/SCENARIO with SET "
                                                   f"Pairwise_set or BoN_set and GOAL Helpfulness or Harmlessness")
                if parts[0] != RMB_SETS[kind]:
                    raise r.error("category_path", f"is {category_path!r}, in {parts[0]}, but the row is a "
                                                   f"{RMB_SETS[kind]} item ({', '.join(_SET_FIELDS[kind])})")
                section = section_of_path(category_path)
                if section not in self.sections:
                    elsewhere[section] = elsewhere.get(section, 0) + 1
                    continue
                uid = r.get(uid_field)
                if isinstance(uid, bool) or not isinstance(uid, (str, int)):
                    raise r.schema_error(uid_field, f"expected a string or a number, got {uid!r}"[:120])
                uid = str(uid)
                prompt = r.prompt("conversation_input")
                if not isinstance(prompt, str) and prompt[-1].role != "user":
                    raise r.error("conversation_input", f"ends with a {prompt[-1].role!r} message; an RMB "
                                                        f"conversation ends with the user's turn, which the answers "
                                                        f"reply to")
                best = _answer(r, best_field, r.get(best_field))
                if kind == "pairwise":
                    others = [_answer(r, other_field, r.get(other_field))]
                else:
                    losers = r.get(other_field)
                    if not isinstance(losers, list) or not losers:
                        raise r.schema_error(other_field, "expected a non-empty list of {llm_name, answer} objects, "
                                                          f"got {losers!r}"[:160])
                    others = [_answer(r, f"{other_field}[{i}]", x) for i, x in enumerate(losers)]
                if uid in seen[kind]:
                    raise r.error(uid_field, f"duplicate {uid_field} {uid!r}")
                group = r.group(id=f"{kind}:{uid}", prompt=prompt, responses=[best[0]] + [o[0] for o in others],
                                utilities=[1] + [0] * len(others), subset=category_path, equivalence_levels=(),
                                meta={uid_field: uid, "category": parts[1], "set": kind,
                                      "llm_names": [best[1]] + [o[1] for o in others]})
                seen[kind].add(uid)
                kept += 1
                yield group
        if not kept and elsewhere:
            where = self.path if self.path is not None else "RMB's pinned files"
            given = ", ".join(f"{n} in {s}" for s, n in sorted(elsewhere.items()))
            sets = {s.split("/")[0] for s in elsewhere}
            hint = ("--task-arg set=" + ("pairwise" if sets == {"Pairwise_set"} else "bon" if sets == {"BoN_set"}
                                         else "both")
                    + ("" if self.category is None else " or leave out category"))
            raise DataError(f"no RMB item of {', '.join(self.sections)} (the task's set and category); the data "
                            f"holds {given}: pass {hint}", path=where)

    def _rows(self) -> Iterator[tuple[str, int, dict]]:
        """The rows of ``path`` (a file, a folder of RMB's tree) or of the pinned files of the
        sections read."""
        if self.path is not None:
            for source in self._local_files(self.path):
                yield from iter_rows(path=source)
            return
        wanted = [key for key in self.files if _section_of_key(key) in self.sections]
        if not wanted:
            raise DataError(f"paths names no file of {', '.join(self.sections)}")
        for key in wanted:
            source = self.files[key]
            if "#git-blob-sha1=" in str(source):
                yield from iter_rows(path=str(fetch_git_blob(*parse_git_blob(source))))
            else:
                yield from iter_rows(path=source)

    def _local_files(self, path: str) -> list[str]:
        """A file or a web file as it is; a folder's ``*.json`` files (under its ``RMB_dataset/``
        when it has one), pairwise first, in path order, but for those its folders put in another
        set or goal."""
        if is_web_source(path):
            return [path]
        p = Path(path).expanduser()
        if p.is_file():
            return [str(p)]
        if not p.is_dir():
            raise DataError("no such file or folder", path=str(p))
        root = p / "RMB_dataset" if (p / "RMB_dataset").is_dir() else p
        found = sorted((f for f in root.rglob("*.json") if f.is_file()
                        and not any(part.startswith(".") for part in f.relative_to(root).parts)),
                       key=lambda f: ("BoN_set" in f.relative_to(root).parts, f.relative_to(root).as_posix()))
        if not found:
            raise DataError("holds no .json file: give RMB's RMB_dataset folder (or part of it) or one of its "
                            "JSON files", path=str(p))
        sets = {RMB_SETS[k] for k in self.sets}
        goals = {s.split("/")[1] for s in self.sections}
        keep = []
        for f in found:
            parts = set(f.relative_to(root).parts[:-1])
            if (parts & (set(RMB_SETS.values()) - sets)) or (parts & (set(RMB_GOALS) - goals)):
                continue
            keep.append(str(f))
        if not keep:
            raise DataError(f"holds no .json file of {', '.join(self.sections)} (the task's set and category)",
                            path=str(p))
        return keep

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``rmb_score``: the total (subset None), each section present (``Pairwise_set/Helpfulness``
        ...) and each scenario (its ``category_path``), from one resample of items
        (:func:`rmbench.core.rmb.rmb_accuracies`)."""
        correct = best_beats_all(rewards, [len(g.responses) for g in groups])
        section_names = [section_of_path(str(g.subset)) for g in groups]
        sections = [s for s in RMB_SECTIONS if s in section_names]
        sections += sorted(set(section_names) - set(sections))  # none from groups(); any other after RMB's four
        scenarios = list(dict.fromkeys(str(g.subset) for g in groups))
        section_of = np.array([sections.index(s) for s in section_names], dtype=np.int64)
        index = {s: i for i, s in enumerate(scenarios)}
        scenario_of = np.array([index[str(g.subset)] for g in groups], dtype=np.int64)
        names = (((RMB_METRIC, None),) + tuple((RMB_METRIC, s) for s in sections)
                 + tuple((RMB_METRIC, s) for s in scenarios))
        counts = ((len(groups),) + tuple(int(n) for n in np.bincount(section_of, minlength=len(sections)))
                  + tuple(int(n) for n in np.bincount(scenario_of, minlength=len(scenarios))))
        n, n_sections, n_scenarios = len(groups), len(sections), len(scenarios)

        def score(units: np.ndarray) -> np.ndarray:
            weights = np.bincount(units, minlength=n).astype(np.float64)
            return rmb_accuracies(correct, section_of, scenario_of, n_sections, n_scenarios, weights=weights)

        return TaskScores(names, score, counts)


def _answer(r: RowReader, field: str, value: Any) -> tuple[str, str | None]:
    """(answer, llm_name) of an ``{llm_name, answer}`` object; errors name ``field`` or ``field.answer``."""
    if not isinstance(value, dict):
        raise r.error(field, f"expected an object {{llm_name, answer}}, got {value!r}"[:160])
    answer = value.get("answer")
    if not isinstance(answer, str):
        raise r.error(f"{field}.answer", "missing" if answer is None else f"expected a string, got {answer!r}"[:120])
    name = value.get("llm_name")
    if name is not None and not isinstance(name, str):
        raise r.error(f"{field}.llm_name", f"expected a string, got {name!r}"[:120])
    return answer, name
