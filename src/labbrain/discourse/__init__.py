"""The read model the discourse tools answer from
(:class:`~labbrain.discourse.reader.DiscourseReader`) and its answer models.
"""
