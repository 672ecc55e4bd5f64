"""Old name of `workbench.runtime.model_actors` (model actors on Ray), kept for old imports."""

from workbench.runtime.model_actors import (  # noqa: F401
    AUTO_PLACEMENT,
    EngineSlot,
    ModelActor,
    Placement,
    RemoteModel,
    engine_for,
    gpus_per_engine,
    plan_engines,
    resolve_placement,
)
