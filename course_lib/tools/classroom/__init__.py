"""Teaching a class: `hub` (nbgitpuller links, collecting submissions), `progress` (a learner's record), `learning` (what a record says), `misconceptions` (a class's report)."""
