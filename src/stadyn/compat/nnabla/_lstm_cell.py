"""NNabla's stateful LSTM cell ``PF.LSTMCell``: it holds the states ``h`` and ``c`` and each
call appends one ``PF.lstm_cell`` step to the graph, replacing them with the step's outputs.

Example:
    >>> import numpy as np, stadyn as sd
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     cell = PF.LSTMCell(2, 4, name="cell")
    ...     h = cell(sd.Variable.from_numpy_array(np.ones((2, 3))))
    ...     h is cell.h, sorted(sd.get_parameters())
    (True, ['cell/lstm/affine/W', 'cell/lstm/affine/b'])
"""

from ...parametric_functions import lstm_cell
from ._variable import Variable

__all__ = ["LSTMCell"]


class LSTMCell:
    """An LSTM cell with its states (NNabla's ``PF.LSTMCell``).

    ``h`` and ``c`` are ``(batch_size, state_size)`` Variables, zeros unless given.  Calling the
    cell with ``x`` ``(batch_size, input_size)`` runs :func:`PF.lstm_cell` on them (parameters
    in ``name/lstm``, or ``lstm`` without a name), makes its outputs the new ``h`` and ``c`` and
    returns ``h``.  :meth:`reset_state` sets the current ``h`` and ``c`` to zero: with
    ``auto_forward`` the next call starts from zero states; in a static graph they are the last
    step's outputs, so a later ``forward`` computes them again (as in NNabla 1.39).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
        ...     cell = PF.LSTMCell(1, 2)
        ...     x = sd.Variable.from_numpy_array(np.ones((1, 3)))
        ...     first = cell(x).d.copy()
        ...     cell.reset_state()
        ...     bool((cell(x).d == first).all())
        True
    """

    def __init__(self, batch_size, state_size, h=None, c=None, name=None):
        self.batch_size = batch_size
        self.state_size = state_size
        self.name = name
        self.h = h if h is not None else self._zeros()
        self.c = c if c is not None else self._zeros()

    def _zeros(self):
        state = Variable((self.batch_size, self.state_size))
        state.d = 0
        return state

    def reset_state(self):
        """Set the current states ``h`` and ``c`` to zero.

        Example:
            >>> import stadyn.compat.nnabla.parametric_functions as PF
            >>> cell = PF.LSTMCell(1, 2)
            >>> cell.h.d = 1.0
            >>> cell.reset_state()
            >>> cell.h.d.tolist()
            [[0.0, 0.0]]
        """
        self.h.d = 0
        self.c.d = 0

    def __call__(self, x, w_init=None, b_init=None, fix_parameters=False):
        """One step on ``x``: updates ``h`` and ``c`` and returns ``h`` (see the class).

        Example:
            >>> import stadyn as sd
            >>> import stadyn.compat.nnabla.parametric_functions as PF
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     PF.LSTMCell(2, 4)(sd.Variable((2, 3))).shape
            (2, 4)
        """
        self.h, self.c = lstm_cell(x, self.h, self.c, self.state_size, w_init, b_init,
                                   fix_parameters=fix_parameters, name=self.name)
        return self.h
