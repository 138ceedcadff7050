"""Paper presets: ``create("lstm@oh2022")`` is the LSTM as Oh et al. (2022) trained it.

A preset is a model name plus the parameters that reproduce one paper's training setup as its
text *and* released code define it; explicit parameters override the preset's
(``create("lstm@oh2022", epochs=5)``). Data filters, splits and metrics of a paper are not model
parameters: the reproduction experiments (:mod:`recaudit.reproduce`) set them, and each preset
lists them under ``data`` so a user can set them in an audit config too. Every difference —
between a paper's text and its code, and between its code and recaudit — is listed in
``differences`` (shown by ``recaudit models list NAME@PRESET``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["Preset", "PRESETS", "preset", "split_name"]


@dataclass(frozen=True)
class Preset:
    """``model`` trained as ``paper`` did: ``params`` for the model, ``data`` for the audit."""

    model: str
    paper: str
    source: str
    params: Mapping[str, Any]
    data: Mapping[str, Any] = field(default_factory=dict)
    differences: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))


_OH_DATA = {"min_user_interactions": 10, "split": "temporal-ratio 0.9, floor='test'",
            "metrics": "average overlap (their 'RBO') over the full list, RBO p=0.9, Jaccard@10, "
                       "MRR, Recall@10"}
_OH_TEXT = ("Text: users with fewer than 10 interactions are removed (Table 2 counts confirm "
            "it); CASPER's code computes that filter but never applies it. The presets follow "
            "the text.",
            "Text: 'the first 90% of interactions of each user' train; code: the last "
            "int(0.1 * n) interactions test (floor of the test part). Experiments use the code: "
            "split floor = 'test'.",
            "Text: 'RBO'; code: the rbo package's RankingSimilarity.rbo() with its default p = 1, "
            "which is average overlap (mean over depths d of |A_d ∩ B_d| / d) over the full "
            "ranking. recaudit reports average overlap and RBO (p = 0.9) side by side.")

_SHRIVER_DATA = {"data": "MovieLens ratings with genres as item attributes", "k": 10,
                 "recommendations": "top-10 of every user over the unrated items"}

PRESETS: dict[str, Preset] = {
    "lstm@oh2022": Preset(
        "lstm", "Oh et al. 2022", "github.com/srijankr/casper src/{main,lstm,util}.py",
        {"embedding_dim": 128, "hidden_dim": 64, "layers": 1, "dropout": 0.0, "lr": 0.001,
         "weight_decay": 1e-5, "batch_size": 1024, "epochs": 50, "batch_order": "temporal",
         "samples": "prefix", "max_len": 49, "first_samples": True, "pad_left": True,
         "init": "torch", "freeze_embedding": True},
        _OH_DATA,
        _OH_TEXT + (
            "Text: maximum sequence length 50; code: look_back = 50 holds the context *and* the "
            "target, so the context is 49 items, right-aligned and zero-padded on the left, and "
            "the LSTM reads the padding (max_len = 49, pad_left).",
            "Code: every training interaction is a sample, a user's first one too (its context "
            "is all padding): first_samples.",
            "Code: item embeddings (128, PyTorch's N(0, 1), padding row 0) are computed once "
            "before training and never trained (freeze_embedding); LSTM hidden size 64; no "
            "dropout; Adam lr 0.001 with weight decay 1e-5; batches of 1024 consecutive "
            "interactions in log order (temporal); 50 epochs; PyTorch's default initialisation "
            "(init = 'torch').",
            "Code: the output layer has n_items + 1 units (index 0 is the padding); the padding "
            "class takes part in the softmax and in their rank lists. recaudit's output layer "
            "and rank lists cover the real items only.",
            "Code: the model before perturbation is deep-copied so both runs start from the same "
            "weights, but other randomness (cuDNN, the global torch seed) is not fixed; recaudit "
            "derives all of it from the trial seed.")),
    "tisasrec@oh2022": Preset(
        "tisasrec", "Oh et al. 2022", "Oh et al. 2022 §5 + Li et al. 2020 (TiSASRec) settings",
        {"embedding_dim": 128, "max_len": 50, "lr": 0.001, "epochs": 50, "blocks": 2,
         "heads": 1, "dropout": 0.2, "time_span": 256, "batch_size": 128,
         "batch_order": "temporal"},
        _OH_DATA,
        _OH_TEXT + (
            "Text: 'hyperparameters of the original publication' with 50 epochs, lr 0.001, "
            "embedding 128, maximum sequence length 50; TiSASRec's paper: 2 blocks, 1 head, "
            "dropout 0.2, time span 256, batch 128.",
            "TiSASRec's code trains with binary cross-entropy against one sampled negative per "
            "positive and L2 on embeddings only; recaudit trains the full-softmax cross-entropy "
            "(no negative sampler) without weight decay.",
            "Batch order: temporal, as Oh et al.'s cascading analysis (§6.1) assumes; "
            "TiSASRec's code draws users at random.")),
    "jodie@oh2022": Preset(
        "jodie", "Oh et al. 2022", "github.com/srijankr/jodie jodie.py, library_models.py",
        {"embedding_dim": 128, "lr": 0.001, "weight_decay": 1e-5, "epochs": 50,
         "grouping": "timespan", "n_spans": 500, "detach_targets": True,
         "loss_reduction": "tbatch-mean", "init": "torch"},
        _OH_DATA,
        _OH_TEXT + (
            "JODIE's code: time spans of (t_last - t_first) / 500 per optimiser step "
            "(grouping = 'timespan'), per-t-batch mean squared errors summed over the span "
            "(loss_reduction = 'tbatch-mean'), regression targets detached, Adam lr 1e-3 with "
            "weight decay 1e-5, initial embeddings normalize(U[0, 1)), PyTorch's default "
            "initialisation elsewhere.",
            "JODIE's code drops the rows after the last completed time span of each epoch; "
            "recaudit trains on them as a final group.",
            "JODIE's code reads a t-batch's states by t-batch position, which can differ from "
            "time order for the user's previous item; recaudit reads exactly the state after "
            "every earlier interaction.",
            "JODIE's evaluation keeps updating embeddings (and the model) on test interactions "
            "as they stream in; recaudit ranks every test query from the end-of-training "
            "state, so both models of a trial answer the same fixed queries.")),
    "latentcross@oh2022": Preset(
        "latentcross", "Oh et al. 2022", "Oh et al. 2022 §5, §6.1, §7.1.4 + Beutel et al. 2018 "
        "(no code)",
        {"embedding_dim": 128, "hidden_dim": 128, "lr": 0.001, "epochs": 50,
         "batch_order": "temporal", "samples": "history", "batch_size": 1024},
        _OH_DATA,
        _OH_TEXT + (
            "No code is public for LatentCross (Beutel et al. 2018); Oh et al. give epochs, lr "
            "and embedding size, train their temporal models in mini-batches in temporal order "
            "(§6.1) and use all of a user's interactions for LatentCross (§7.1.4). recaudit "
            "trains every interaction as a sample, 1,024 consecutive interactions of the log "
            "per step (the batch of CASPER's released LSTM code), each user's GRU state "
            "carried over the whole history (samples = 'history'); time-gap context in 32 "
            "log2 buckets; hidden size 128 (= the embedding size).",
            "Gradient truncation (not stated by Oh et al.): back-propagation through time "
            "within a mini-batch, states detached between mini-batches and restarted at each "
            "epoch, as JODIE's code does for its trajectories.",
            "Ranking: a test query starts from its user's state after the whole training "
            "history under the final weights and advances over the query's earlier test "
            "interactions (recomputed in evaluation mode after training).",
            "The window variant of earlier recaudit releases (50-item windows, the GRU "
            "restarting every 50 items) is samples = 'window'.")),
    "sasrec@betello2023": Preset(
        "sasrec", "Betello et al. 2023", "Betello et al. 2023 §4.3 + RecBole 1.2.1 defaults",
        {"embedding_dim": 64, "blocks": 2, "heads": 2, "inner_dim": 256, "dropout": 0.5,
         "max_len": 50, "lr": 0.0005, "batch_size": 4096, "epochs": 300, "patience": 50,
         "patience_metric": "ndcg@20", "samples": "prefix", "batch_order": "shuffled"},
        {"min_user_interactions": 10, "split": "leave-last-out (validation: second to last)",
         "metrics": "@20: FRBO, Jaccard, NDCG, MRR, Recall, Precision"},
        ("Betello et al. train RecBole 1.2.1's SASRec with its defaults (hidden 64, 2 layers, "
         "2 heads, inner 256, dropout 0.5, 50 items), batch 4096, Adam lr 5e-4, up to 300 "
         "epochs, stopping when the validation NDCG@20 has not improved for 50 epochs.",
         "RecBole's SASRec block is post-LN with a GELU feed-forward layer and unscaled "
         "position embeddings; recaudit's is Kang & McAuley's pre-LN block with ReLU.",
         "RecBole validates on each user's second-to-last interaction; recaudit's patience "
         "holds out each user's last training interaction (the same item under a leave-last-"
         "out split with validation).")),
    "gru4rec@betello2023": Preset(
        "gru4rec", "Betello et al. 2023", "Betello et al. 2023 §4.3 + RecBole 1.2.1 defaults",
        {"embedding_dim": 64, "hidden_dim": 128, "layers": 1, "dropout": 0.3, "max_len": 50,
         "lr": 0.0005, "batch_size": 4096, "epochs": 300, "patience": 50,
         "patience_metric": "ndcg@20", "samples": "prefix", "batch_order": "shuffled"},
        {"min_user_interactions": 10, "split": "leave-last-out (validation: second to last)",
         "metrics": "@20: FRBO, Jaccard, NDCG, MRR, Recall, Precision"},
        ("Betello et al. train RecBole 1.2.1's GRU4Rec with its defaults (embedding 64, GRU "
         "128, 1 layer, dropout 0.3), batch 4096, Adam lr 5e-4, up to 300 epochs, stopping "
         "when the validation NDCG@20 has not improved for 50 epochs.",
         "RecBole validates on each user's second-to-last interaction; recaudit's patience "
         "holds out each user's last training interaction (the same item under a leave-last-"
         "out split with validation).")),
    # Shriver 2018 (MS thesis, UNL), §3.4.1.1 / §4.2.1.1: LensKit's Java User-User, Item-Item,
    # FunkSVD and Slope One (LensKit 3.0, 2018 defaults) and the author's LightFM.
    "user-user@shriver2018": Preset(
        "user-user", "Shriver 2018", "Shriver 2018 §3.4.1.1 + LensKit 3.0 (Java) defaults",
        {"max_nbrs": 20, "min_nbrs": 1, "negative": True},
        _SHRIVER_DATA,
        ("Text: LensKit's User-User with cosine similarity (of mean-centred ratings); 'User-User "
         "can recommend items with low ratings if two users rating sets have a negative "
         "correlation' (§3.5.1). LensKit Java's UserSimilarityThreshold is an AbsoluteThreshold "
         "of 0, which keeps negatively similar neighbours: negative = True. Checked: on "
         "MovieLens-100k the most influential rating value (Table 4.1's rating influence) "
         "becomes 1.0, as §4.2.2.3 reports; with positive neighbours only it is 4.0.",
         "LensKit Java defaults: 20 neighbours, at least 1; score mean_u + sum sim (r - mean_v) "
         "/ sum |sim| over the 20 largest similarities.")),
    "item-item@shriver2018": Preset(
        "item-item", "Shriver 2018", "Shriver 2018 §3.4.1.1 + LensKit 3.0 (Java) defaults",
        {"max_nbrs": 20, "min_nbrs": 1, "negative": True},
        _SHRIVER_DATA,
        ("Text: LensKit's Item-Item. LensKit Java's ItemSimilarityThreshold is an "
         "AbsoluteThreshold of 0 (negative similarities kept): negative = True. recaudit "
         "centres on item means before the cosine (LensKit Python's rule); LensKit Java's "
         "normaliser defaults are not reproduced beyond that. On MovieLens-100k the most "
         "influential rating value is 4.0, as §4.2.2.3 reports, with or without negatives.",)),
    "funksvd@shriver2018": Preset(
        "funksvd", "Shriver 2018", "Shriver 2018 §3.4.1.1 + LensKit 3.0 (Java) defaults",
        {"features": 25, "damping": 0.0},
        _SHRIVER_DATA,
        ("Text: LensKit's FunkSVD with 25 latent features. LensKit Java's BiasDamping defaults "
         "to 0 (recaudit's default, from LensKit Python, is 5): undamped item biases rank items "
         "with a single 5-star rating high. Checked: on MovieLens-100k 28 distinct items are "
         "recommended, 10 of them with mean rating 5.0, the most influential rating value; "
         "Table 4.1 reports 31 items, 12 with mean 5.0.",
         "LensKit Java iterates the ratings in snapshot order and stops by its training-loop "
         "controller, and clamps predictions to the rating domain when one is configured "
         "(ties at the top); recaudit runs 100 passes per feature in a seeded random order and "
         "does not clamp. On ml-latest-small (many movies with one 5-star rating) the preset "
         "recommends almost only such movies; the thesis' FunkSVD on MovieLens 20M did not "
         "(Table 3.4: NRTK(median) = 1756.5), so this reading fits Chapter 4 better than "
         "Chapter 3.")),
    "slope-one@shriver2018": Preset(
        "slope-one", "Shriver 2018", "Shriver 2018 §3.4.1.1 + LensKit 3.0 (Java) defaults",
        {"weighted": False},
        _SHRIVER_DATA,
        ("Text: LensKit's Slope One: the unweighted SlopeOneItemScorer (recaudit's default).",)),
    "lightfm@shriver2018": Preset(
        "lightfm", "Shriver 2018", "Shriver 2018 §3.4.1.1 (no settings given)",
        {"use_attributes": True},
        _SHRIVER_DATA,
        ("Text: the author's Python LightFM with the genres as item attributes; no loss, "
         "dimension or epochs are given. recaudit's adapter defaults (WARP, 30 components, 20 "
         "epochs, identity + genre features) are used.",
         "lightfm-next replaces lightfm 1.x; training is single-threaded and seeded, so "
         "retraining on the same data gives the same lists (the thesis' LightFM did not: "
         "Table 4.6 reports TopOut 0.007 for ZERO).")),

}


def split_name(name: str) -> tuple[str, str | None]:
    """``"lstm@oh2022"`` -> ``("lstm", "oh2022")``; ``"lstm"`` -> ``("lstm", None)``."""
    base, _, tag = name.partition("@")
    return base, (tag or None)


def preset(name: str) -> Preset:
    """The preset called ``name`` (``model@paper``), with a closest-name hint if unknown."""
    from recaudit.errors import ConfigError, did_you_mean

    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(sorted(PRESETS))}."
                          + did_you_mean(name, PRESETS))
    return PRESETS[name]
