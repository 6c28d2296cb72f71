"""Analysis of played frames (recorded or simulated): the shine drill's metrics."""

from exphil.analysis.shines import ShineMetrics, families, shine_metrics, table_metrics

__all__ = ["ShineMetrics", "families", "shine_metrics", "table_metrics"]
