"""Property templates over users, items, ratings and rankings (Shriver 2018, Chapter 3).

- :class:`Universe` and its vectorised query API (:class:`Ranks`, :class:`Items`,
  :class:`Values`, :class:`Groups`) — write your own templates with it;
- :data:`TEMPLATES` — the 12 built-ins (NRANKS, NRI, NTRI, NRLMU, NRL, NRS, NUPRL, NUIR,
  IANRLCMP, ARTK, IANR, NRTK); :func:`instantiate` solves a partial instantiation or evaluates a
  full one, and renders its sentence; :func:`register_template` adds one;
- the study: :func:`property_table` (Table 3.4), :func:`evolving_study` (Table 3.6),
  :func:`cross_validate` (precision/recall@k, five folds on users, 80/20 per test user) in
  memory; :class:`PropertyStudy` runs the same as a study (a trial per model and step, any
  executor, resumable, tables ``property_trials`` and ``property_values``) and
  :func:`read_values`, :func:`property_frame`, :func:`evolving_frames` read it back.

Example::

    model = recaudit.models.create("item-item").fit(log, seed=0)
    items, _ = model.recommend(np.arange(log.n_users), k=10)   # -1 where nothing is ranked
    u = Universe.from_log(log, items, item_noun="movies")
    p = instantiate("NRANKS", u, k=10, f="min", rel=">=")      # solves n
    p.value, p.sentence   # 10.0, "The minimum number of movies ranked in the top 10 for ..."
    instantiate("NRANKS", u, k=10, f="min", rel=">=", n=11).holds   # False

    # a template of your own, written with the query API
    register_template(Template(
        "NUPOP1", "Novelty", "Users whose top item is popular", "threshold",
        lambda u, k: len(u.ranks(1).where(lambda r: u.item_rating_count[r.item] >= 100)
                         .users()),
        lambda p, noun: f"At least {p['n']:g} users get a top item with 100+ ratings.",
        fixed_rel=">=", params=("k", "n")))
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports
from recaudit.properties import _schema  # noqa: F401 - declares the tables a store reads

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.properties._tables import (
        STUDY_PROPERTIES,
        StudyProperty,
        cross_validate,
        evolving_study,
        percent_change,
        property_table,
        recommend_all,
        step,
    )
    from recaudit.properties._schema import PROPERTY_TRIALS, PROPERTY_VALUES, STUDY, read_values
    from recaudit.properties._study import (
        PropertyStudy,
        PropertyTrial,
        evolving_frames,
        property_frame,
        release_years,
        run_property_trial,
    )
    from recaudit.properties._templates import (
        RELATIONS,
        TEMPLATES,
        Property,
        Template,
        instantiate,
        register_template,
    )
    from recaudit.properties._universe import AGGREGATES, Groups, Items, Ranks, Universe, Values

__getattr__, __dir__ = exports(__name__, {
    "._tables": ("STUDY_PROPERTIES", "StudyProperty", "cross_validate", "evolving_study",
                 "percent_change", "property_table", "recommend_all", "step"),
    "._schema": ("PROPERTY_TRIALS", "PROPERTY_VALUES", "STUDY", "read_values"),
    "._study": ("PropertyStudy", "PropertyTrial", "evolving_frames", "property_frame",
                "release_years", "run_property_trial"),
    "._templates": ("RELATIONS", "TEMPLATES", "Property", "Template", "instantiate",
                    "register_template"),
    "._universe": ("AGGREGATES", "Groups", "Items", "Ranks", "Universe", "Values"),
})

__all__ = ["AGGREGATES", "PROPERTY_TRIALS", "PROPERTY_VALUES", "RELATIONS", "STUDY", "STUDY_PROPERTIES",
           "TEMPLATES", "Groups", "Items", "Property", "PropertyStudy", "PropertyTrial", "Ranks",
           "StudyProperty", "Template", "Universe", "Values", "cross_validate",
           "evolving_frames", "evolving_study", "instantiate", "percent_change",
           "property_frame", "property_table", "read_values", "recommend_all",
           "register_template", "release_years", "run_property_trial", "step"]
